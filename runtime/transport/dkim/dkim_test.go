package dkim_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/transport/dkim"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
)

// reply renders a reply as the outbox sends it.
func reply(t *testing.T) []byte {
	t.Helper()
	raw, err := mail.Render(&history.Message{
		MessageID: "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", InReplyTo: "q1@cust.example", References: []string{"q1@cust.example"},
		From: "Support <support@acme.example>", To: []string{"Ann <ann@cust.example>"}, Subject: "Re: my order",
		Date: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), Text: "Your order ships tomorrow.\n\nSupport\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func keys(t *testing.T) (rsaKey *rsa.PrivateKey, edKey ed25519.PrivateKey) {
	t.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return rsaKey, edKey
}

func records(t *testing.T, byName map[string]crypto.Signer) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, k := range byName {
		rec, err := dkim.PublicKeyRecord(k)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = rec
	}
	return out
}

// verifyGo verifies with go-msgauth's verifier, the key records answering its look-ups.
func verifyGo(t *testing.T, raw []byte, recs map[string]string) []string {
	t.Helper()
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(raw), &msgauth.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if r, ok := recs[name]; ok {
			return []string{r}, nil
		}
		return nil, errors.New("no record " + name)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		s := "pass d=" + v.Domain
		if v.Err != nil {
			s = "fail d=" + v.Domain + ": " + v.Err.Error()
		}
		out = append(out, s)
	}
	return out
}

func TestSignedRepliesVerifyWithRSAAndEd25519(t *testing.T) {
	rsaKey, edKey := keys(t)
	rsaSigner, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: "rsa", Key: rsaKey})
	if err != nil {
		t.Fatal(err)
	}
	edSigner, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: "ed", Key: edKey})
	if err != nil {
		t.Fatal(err)
	}
	raw := reply(t)
	once, err := rsaSigner.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := edSigner.Sign(once)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(twice, raw) || !bytes.HasPrefix(twice, []byte("DKIM-Signature: ")) {
		t.Fatalf("signed message does not end with the rendered bytes:\n%s", twice)
	}
	recs := records(t, map[string]crypto.Signer{"rsa._domainkey.acme.example": rsaKey, "ed._domainkey.acme.example": edKey})
	sig := string(twice[:len(twice)-len(once)])
	for _, want := range []string{"a=ed25519-sha256", "c=relaxed/relaxed", "d=acme.example", "s=ed",
		"h=From:Reply-To:Subject:Date:To:Cc:Message-ID:In-Reply-To:References:MIME-Version:Content-Type:Content-Transfer-Encoding:Auto-Submitted"} {
		if !strings.Contains(strings.NewReplacer("\r\n ", "", " ", "").Replace(sig), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("signature lacks %s:\n%s", want, sig)
		}
	}
	for _, l := range strings.Split(string(twice), "\r\n") {
		if len(l) > 998 {
			t.Errorf("a line of %d octets", len(l))
		}
	}
	if got := verifyGo(t, twice, recs); !slices.Equal(got, []string{"pass d=acme.example", "pass d=acme.example"}) {
		t.Errorf("go-msgauth: %q", got)
	}
	want := []string{"pass d=acme.example s=ed a=ed25519-sha256", "pass d=acme.example s=rsa a=rsa-sha256"}
	if got := transporttest.VerifyDKIM(t, twice, recs); !slices.Equal(got, want) {
		t.Errorf("dkimpy: %q, want %q", got, want)
	}
	// Relaxed canonicalization survives what relays do to headers; a changed body does not.
	relayed := bytes.Replace(twice, []byte("Subject: Re: my order"), []byte("subject:   Re: my order  "), 1)
	relayed = append([]byte("Received: from relay by mx; Mon, 2 Mar 2026 10:00:01 +0000\r\n"), relayed...)
	if got := transporttest.VerifyDKIM(t, relayed, recs); !slices.Equal(got, want) {
		t.Errorf("dkimpy after header rewrites: %q, want %q", got, want)
	}
	tampered := bytes.Replace(twice, []byte("ships tomorrow"), []byte("ships never"), 1)
	if got := transporttest.VerifyDKIM(t, tampered, recs); !slices.Equal(got, []string{"fail d=acme.example s=ed a=ed25519-sha256", "fail d=acme.example s=rsa a=rsa-sha256"}) {
		t.Errorf("dkimpy on a changed body: %q, want two failures", got)
	}
}

type recorder struct{ got []service.Outgoing }

func (r *recorder) Send(_ context.Context, m service.Outgoing) error {
	r.got = append(r.got, m)
	return nil
}

func TestSenderSignsEveryReplyAndKeepsTheRest(t *testing.T) {
	_, edKey := keys(t)
	s, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: "ed", Key: edKey})
	if err != nil {
		t.Fatal(err)
	}
	next := &recorder{}
	raw := reply(t)
	m := service.Outgoing{Seq: 7, MessageID: "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", From: "support@acme.example", To: []string{"ann@cust.example"}, Raw: raw, Attempt: 2}
	if err := s.Sender(next).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if len(next.got) != 1 {
		t.Fatalf("%d sends", len(next.got))
	}
	got := next.got[0]
	if got.Seq != 7 || got.Attempt != 2 || got.MessageID != m.MessageID || !bytes.HasSuffix(got.Raw, raw) || !bytes.HasPrefix(got.Raw, []byte("DKIM-Signature:")) {
		t.Errorf("sent %+v", got)
	}
	if !bytes.Equal(m.Raw, raw) {
		t.Error("the caller's Raw was changed")
	}
	bad := m
	bad.Raw = []byte("no header at all")
	if err := s.Sender(next).Send(context.Background(), bad); err == nil || !service.IsPermanent(err) {
		t.Errorf("unsignable message: %v, want a permanent error", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	rsaKey, edKey := keys(t)
	small := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), 511), E: 65537}} // 512 bits
	tests := []struct {
		name string
		o    dkim.Options
		want string
	}{
		{"no domain", dkim.Options{Selector: "s", Key: edKey}, "needs a domain and a selector"},
		{"no selector", dkim.Options{Domain: "acme.example", Key: edKey}, "needs a domain and a selector"},
		{"no key", dkim.Options{Domain: "acme.example", Selector: "s"}, "needs a key"},
		{"a small RSA key", dkim.Options{Domain: "acme.example", Selector: "s", Key: small}, "RSA key of 512 bits"},
		{"headers without From", dkim.Options{Domain: "acme.example", Selector: "s", Key: rsaKey, Headers: []string{"Subject"}}, "From header field must be signed"},
		{"a selector with a semicolon", dkim.Options{Domain: "acme.example", Selector: "s;x", Key: rsaKey}, "has a space"},
	}
	for _, tt := range tests {
		if _, err := dkim.New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}

func TestLoadKeyReadsPKCS1AndPKCS8(t *testing.T) {
	rsaKey, edKey := keys(t)
	pkcs8RSA, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	pkcs8Ed, _ := x509.MarshalPKCS8PrivateKey(edKey)
	for name, b := range map[string][]byte{
		"PKCS#1 RSA": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"PKCS#8 RSA": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8RSA}),
		"PKCS#8 Ed":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8Ed}),
	} {
		k, err := dkim.LoadKey(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := crypto.PublicKey(rsaKey.Public())
		if strings.HasSuffix(name, "Ed") {
			want = edKey.Public()
		}
		if eq, ok := k.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(want) {
			t.Errorf("%s: another key", name)
		}
	}
	for name, b := range map[string][]byte{
		"not PEM":     []byte("hello"),
		"certificate": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}),
		"garbage":     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}),
	} {
		if _, err := dkim.LoadKey(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
