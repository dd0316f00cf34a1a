package smtp_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/dkim"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

// TestMain runs a child role (transporttest.StartChild) instead of the tests when asked.
func TestMain(m *testing.M) {
	if role := os.Getenv(transporttest.ChildEnv); role != "" {
		runChild(role)
		return
	}
	os.Exit(m.Run())
}

// runChild runs an LMTP listener on $LISTEN for support, over the store at $DSN. Role
// "listener" delivers normally; "stop-in-data" prints "IN DATA" when a message's data starts
// and hangs; "stop-after-commit" prints "COMMITTED" once the message is in the store and
// hangs before the listener could answer 250. The test kills it there.
func runChild(role string) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	st, err := store.Open(ctx, os.Getenv("DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	d := transporttest.NewDeliverer(st, support)
	hang := func(line string) {
		fmt.Println(line)
		select {}
	}
	switch role {
	case "stop-in-data":
		d.BeforeDeliver = func(service.Envelope) { hang("IN DATA") }
	case "stop-after-commit":
		d.AfterCommit = func(*mail.Ingested) { hang("COMMITTED") }
	}
	l, err := smtp.New(smtp.Options{Addr: os.Getenv("LISTEN"), LMTP: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("READY")
	if err := l.Receive(ctx, d); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// countStored returns how many messages mailbox holds.
func countStored(t *testing.T, dsn, mailbox string) int {
	t.Helper()
	s := transporttest.Open(t, dsn)
	return len(transporttest.Stored(t, s, mailbox))
}

func TestPostfixDeliversToTheListeners(t *testing.T) {
	for _, lmtp := range []bool{true, false} {
		name := map[bool]string{true: "lmtp", false: "smtp"}[lmtp]
		t.Run(name, func(t *testing.T) {
			dl := storeDeliverer(t)
			l := listen(t, smtp.Options{LMTP: lmtp}, dl)
			hop := "lmtp:inet:" + l.Addr().String()
			if !lmtp {
				hop = "smtp:[127.0.0.1]:" + strings.Split(l.Addr().String(), ":")[1]
			}
			p := transporttest.StartPostfix(t, transporttest.PostfixConfig{Transports: map[string]string{"acme.example": hop}})
			out, code := transporttest.Swaks(t, "--server", p.Addr(), "--pipeline", "--from", "ann@cust.example",
				"--to", "support@acme.example", "--header", "Message-Id: <pf-"+name+"@cust.example>")
			if code != 0 {
				t.Fatalf("swaks: %d\n%s", code, out)
			}
			transporttest.Eventually(t, time.Minute, "the message stored", func() bool { return len(transporttest.Stored(t, dl.Store, "support")) == 1 }, p.Log)
			p.WaitLog("to=<support@acme.example>, relay=127.0.0.1[127.0.0.1]:" + strings.Split(l.Addr().String(), ":")[1])
			if !strings.Contains(p.Log(), "status=sent (250 2.0.0") {
				t.Errorf("postfix did not log the 250:\n%s", transporttest.Tail(p.Log(), 20))
			}
			// A recipient no persona has: Postfix queued it, the listener refuses it at RCPT TO
			// with 550 5.1.1, and Postfix bounces it (to cust.example, which it cannot reach here).
			if out, code := transporttest.Swaks(t, "--server", p.Addr(), "--from", "ann@cust.example", "--to", "stranger@acme.example"); code != 0 {
				t.Fatalf("swaks: %d\n%s", code, out)
			}
			p.WaitLog("to=<stranger@acme.example>")
			p.WaitLog("status=bounced")
			if log := p.Log(); !strings.Contains(log, "550 5.1.1 <stranger@acme.example>: Recipient address rejected: no such persona here") {
				t.Errorf("postfix log lacks the 550 5.1.1:\n%s", transporttest.Tail(log, 20))
			}
			if got := transporttest.Stored(t, dl.Store, "support"); len(got) != 1 {
				t.Errorf("support holds %q", got)
			}
		})
	}
}

// TestKilledListenerLosesNothingAndStoresOnce kills the listener's process with SIGKILL while
// it reads a message, and after the message was committed but before its 250: Postfix, which
// got no answer, delivers again to the restarted listener, and the message is stored once.
func TestKilledListenerLosesNothingAndStoresOnce(t *testing.T) {
	for _, role := range []string{"stop-in-data", "stop-after-commit"} {
		t.Run(role, func(t *testing.T) {
			dsn := transporttest.ScratchDSN(t, store.DialectSQLite)
			addr := fmt.Sprintf("127.0.0.1:%d", transporttest.FreePort(t))
			env := []string{"DSN=" + dsn, "LISTEN=" + addr}
			child := transporttest.StartChild(t, role, env...)
			child.WaitLine("READY")
			p := transporttest.StartPostfix(t, transporttest.PostfixConfig{Transports: map[string]string{"acme.example": "lmtp:inet:" + addr}})
			if out, code := transporttest.Swaks(t, "--server", p.Addr(), "--from", "ann@cust.example", "--to", "support@acme.example",
				"--header", "Message-Id: <killed@cust.example>"); code != 0 {
				t.Fatalf("swaks: %d\n%s", code, out)
			}
			line := map[string]string{"stop-in-data": "IN DATA", "stop-after-commit": "COMMITTED"}[role]
			child.WaitLine(line)
			child.Kill()
			want := map[string]int{"stop-in-data": 0, "stop-after-commit": 1}[role]
			if n := countStored(t, dsn, "support"); n != want {
				t.Fatalf("after the kill the store holds %d messages, want %d", n, want)
			}
			p.WaitLog("status=deferred")
			restarted := transporttest.StartChild(t, "listener", env...)
			restarted.WaitLine("READY")
			p.WaitLog("status=sent (250 2.0.0 <support@acme.example> OK: queued)")
			if n := countStored(t, dsn, "support"); n != 1 {
				t.Errorf("the store holds %d copies, want 1", n)
			}
		})
	}
}

// signedRelay returns a Relay to p (STARTTLS with p's certificate) behind two DKIM signers, the
// Ed25519 one signing first and the RSA one last (so its signature is on top), and the key records that verify them.
func signedRelay(t *testing.T, p *transporttest.Postfix, cert *transporttest.Cert) (service.Sender, map[string]string) {
	t.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var sender service.Sender = relay(t, smtp.RelayOptions{Addr: p.Addr(), TLSConfig: cert.ClientTLS()})
	recs := map[string]string{}
	for _, k := range []struct {
		sel string
		key crypto.Signer
	}{{"rsa", rsaKey}, {"ed", edKey}} {
		sel := k.sel
		s, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: sel, Key: k.key})
		if err != nil {
			t.Fatal(err)
		}
		sender = s.Sender(sender)
		if recs[sel+"._domainkey.acme.example"], err = dkim.PublicKeyRecord(k.key); err != nil {
			t.Fatal(err)
		}
	}
	return sender, recs
}

// storedReply stores an inbound message and support's reply to it in st and returns the reply
// as the outbox hands it to a sender.
func storedReply(t *testing.T, st *store.Store, to string) service.Outgoing {
	t.Helper()
	ctx := context.Background()
	q := history.Message{ThreadID: "support/t1", MessageID: "q1@cust.example", Direction: history.Inbound, From: to, To: []string{"support@acme.example"},
		Subject: "my order", Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Text: "Where is it?"}
	if _, err := st.AppendMessage(ctx, store.Message{Message: q, Mailbox: "support"}); err != nil {
		t.Fatal(err)
	}
	r, err := mail.NewReply(support, &q, "run-"+to, "It ships tomorrow.\n", time.Date(2026, 3, 2, 9, 5, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.AppendMessage(ctx, store.Message{Message: *r, Mailbox: "support", RunKey: "run-" + to})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := mail.Render(r)
	if err != nil {
		t.Fatal(err)
	}
	return service.Outgoing{Persona: support, Seq: a.Seq, MessageID: r.MessageID, From: "support@acme.example", To: []string{to}, Raw: raw, Attempt: 1}
}

// crlf turns a maildir file's line ends back into the wire's.
func crlf(b []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

func TestRelayThroughPostfixSignedIntoDovecot(t *testing.T) {
	d := transporttest.StartDovecot(t, map[string]string{"customer@cust.example": "pw"})
	cert := transporttest.NewCert(t, t.TempDir())
	p := transporttest.StartPostfix(t, transporttest.PostfixConfig{Transports: map[string]string{"cust.example": "lmtp:inet:" + d.LMTPAddr()}, TLS: cert})
	sender, recs := signedRelay(t, p, cert)
	st := transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite))
	m := storedReply(t, st, "customer@cust.example")
	if err := sender.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	transporttest.Eventually(t, time.Minute, "the reply in the customer's mailbox", func() bool { return len(d.Messages("customer@cust.example")) == 1 },
		func() string { return p.Log() + d.Log() })
	got := crlf(d.Messages("customer@cust.example")[0])
	if !bytes.HasSuffix(got, m.Raw) {
		t.Errorf("the delivered message does not end with the rendered reply:\n%s", got)
	}
	if !bytes.Contains(got, []byte("Return-Path: <support+bounce-"+strings.TrimSuffix(m.MessageID, "@acme.example")+"@acme.example>")) {
		t.Errorf("the envelope sender is not the reply's bounce address:\n%s", got[:400])
	}
	want := []string{"pass d=acme.example s=rsa a=rsa-sha256", "pass d=acme.example s=ed a=ed25519-sha256"}
	if v := transporttest.VerifyDKIM(t, got, recs); !slices.Equal(v, want) {
		t.Errorf("dkimpy after Postfix and Dovecot: %q, want %q", v, want)
	}
	if !strings.Contains(p.Log(), "ehlo=2 starttls=1 mail=1 rcpt=1 data=1 quit=1") {
		t.Errorf("the relay did not use STARTTLS:\n%s", transporttest.Tail(p.Log(), 20))
	}
}

// TestRelayRefusalsOfARealPostfix: 451 is transient and the retry after it delivers once; 550
// is permanent with Postfix's text.
func TestRelayRefusalsOfARealPostfix(t *testing.T) {
	d := transporttest.StartDovecot(t, map[string]string{"customer@cust.example": "pw", "other@cust.example": "pw"})
	p := transporttest.StartPostfix(t, transporttest.PostfixConfig{Transports: map[string]string{"cust.example": "lmtp:inet:" + d.LMTPAddr()},
		Access: map[string]string{"customer@cust.example": "451 4.3.0 try again later", "other@cust.example": "550 5.1.1 no such user here"}})
	r := relay(t, smtp.RelayOptions{Addr: p.Addr(), TLS: smtp.NoTLS})
	st := transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite))
	m := storedReply(t, st, "customer@cust.example")
	err := r.Send(context.Background(), m)
	if err == nil || service.IsPermanent(err) || !strings.Contains(err.Error(), "RCPT TO:<customer@cust.example>: 451 4.3.0 <customer@cust.example>: Recipient address rejected: try again later") {
		t.Fatalf("first attempt: %v, want a transient 451", err)
	}
	p.SetAccess(map[string]string{"other@cust.example": "550 5.1.1 no such user here"})
	// Postfix's reload reaches its smtpd processes in their own time: until it has, the relay's
	// later attempts still get the 451, which stays transient, as the service's retries would.
	var last error
	transporttest.Eventually(t, time.Minute, "a later attempt accepted", func() bool {
		m.Attempt++
		last = r.Send(context.Background(), m)
		if service.IsPermanent(last) {
			t.Fatalf("attempt %d: %v, want transient until Postfix reloaded", m.Attempt, last)
		}
		return last == nil
	}, func() string { return fmt.Sprint(last) })
	transporttest.Eventually(t, time.Minute, "the reply delivered", func() bool { return len(d.Messages("customer@cust.example")) == 1 }, p.Log)
	o := m
	o.To = []string{"other@cust.example"}
	err = r.Send(context.Background(), o)
	if !service.IsPermanent(err) || !strings.Contains(err.Error(), "550 5.1.1 <other@cust.example>: Recipient address rejected: no such user here") {
		t.Errorf("550: %v, want a permanent error with Postfix's text", err)
	}
	time.Sleep(2 * time.Second) // a queue run: nothing more arrives
	if n := len(d.Messages("customer@cust.example")); n != 1 {
		t.Errorf("the customer got %d copies, want 1", n)
	}
	if n := len(d.Messages("other@cust.example")); n != 0 {
		t.Errorf("the refused recipient got %d", n)
	}
}

// TestBounceComesBackAndMarksTheReply: a reply to a user Dovecot does not have is bounced by
// Postfix to the reply's bounce address, which reaches support's listener; the report is
// stored unanswered and the reply is marked bounced with Dovecot's status.
func TestBounceComesBackAndMarksTheReply(t *testing.T) {
	for _, dialect := range transporttest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			d := transporttest.StartDovecot(t, map[string]string{"customer@cust.example": "pw"})
			dl := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, dialect)), support)
			l := listen(t, smtp.Options{LMTP: true}, dl)
			p := transporttest.StartPostfix(t, transporttest.PostfixConfig{Transports: map[string]string{
				"cust.example": "lmtp:inet:" + d.LMTPAddr(), "acme.example": "lmtp:inet:" + l.Addr().String()}})
			m := storedReply(t, dl.Store, "gone@cust.example")
			if err := relay(t, smtp.RelayOptions{Addr: p.Addr(), TLS: smtp.NoTLS}).Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			transporttest.Eventually(t, time.Minute, "the bounce stored", func() bool { return len(transporttest.Stored(t, dl.Store, "support")) == 3 }, p.Log)
			state, err := dl.Store.ReplyState(context.Background(), m.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if state.Status != "bounced" || state.BounceStatus != "5.1.1" ||
				!strings.HasPrefix(state.BounceDiagnostic, "gone@cust.example: smtp; 550 5.1.1 <gone@cust.example> User doesn't exist") {
				t.Errorf("reply state %+v", state)
			}
			env := dl.WaitEnvelopes(t, 1)
			if len(env) != 1 || env[0].Sender != "" || !slices.Equal(env[0].Recipients, []string{mail.BounceAddress("support@acme.example", m.MessageID)}) {
				t.Errorf("the bounce's envelope %+v", env)
			}
		})
	}
}
