package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	netmail "net/mail"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/provider/scripted"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/dkim"
	"github.com/personagen/personagen/runtime/transport/imap"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

// persona returns a persona at address whose chain is a prompt and the thread's history.
func persona(st *store.Store, name, address string) *runtime.Persona {
	p := transporttest.Persona(name, address)
	p.Model = chat.ModelSettings{Name: "test-model", MaxTokens: 256}
	p.MessageChain = runtime.NewChain(
		runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer email for " + name + "."}},
		runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: st}},
	)
	return p
}

// answer runs p's reply to the stored message id of p's mailbox with the scripted text and
// returns the reply as the outbox hands it to a sender.
func answer(t *testing.T, st *store.Store, p *runtime.Persona, id, text string) service.Outgoing {
	t.Helper()
	ctx := context.Background()
	m, err := st.Message(ctx, p.Name, id)
	if err != nil {
		t.Fatal(err)
	}
	runner := &agent.Runner{Store: st, Model: scripted.New(scripted.Text(text))}
	res, err := runner.Reply(ctx, agent.Inbound{Persona: p, Message: m})
	if err != nil {
		t.Fatalf("%s answers %s: %v", p.Name, id, err)
	}
	raw, err := mail.Render(&res.Reply.Message)
	if err != nil {
		t.Fatal(err)
	}
	var to []string
	for _, a := range append(append([]string(nil), res.Reply.To...), res.Reply.Cc...) {
		addr, err := netmail.ParseAddress(a)
		if err != nil {
			t.Fatalf("reply recipient %q: %v", a, err)
		}
		to = append(to, addr.Address)
	}
	return service.Outgoing{Persona: p, Seq: res.Reply.Seq, MessageID: res.Reply.MessageID, From: p.Mailbox.Address, To: to, Raw: raw, Attempt: 1}
}

// header reads one header field of a raw message.
func header(t *testing.T, raw []byte, name string) string {
	t.Helper()
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	return h.Get(name)
}

// TestMailRoundTripThroughPostfixAndDovecot is the transports' end-to-end path without the
// service: a customer's message sent with swaks through Postfix reaches support's LMTP listener
// and the store; support's answer (agent.Runner with a scripted model) leaves through the relay
// DKIM-signed with RSA and Ed25519, through Postfix, into the customer's Dovecot mailbox, where
// both signatures verify; an IMAP receiver reads it for a second persona (the customer's) and
// stores it once (not to be answered: it is an automatic reply); the customer's answer to it goes
// back through Postfix to support's listener and joins the first thread.
func TestMailRoundTripThroughPostfixAndDovecot(t *testing.T) {
	for _, dialect := range transporttest.Dialects {
		t.Run(string(dialect), func(t *testing.T) { roundTrip(t, dialect) })
	}
}

func roundTrip(t *testing.T, dialect store.Dialect) {
	ctx := context.Background()
	st := transporttest.Open(t, transporttest.ScratchDSN(t, dialect))
	support := persona(st, "support", "support@acme.example")
	customer := persona(st, "customer", "customer@cust.example")
	support.Mailbox.AcceptFrom = []string{"customer"} // it answers the other persona's mail
	d := transporttest.NewDeliverer(st, support, customer)

	dv := transporttest.StartDovecot(t, map[string]string{"customer@cust.example": "pw"})
	listener, err := smtp.New(smtp.Options{Addr: "127.0.0.1:0", LMTP: true})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go listener.Receive(lctx, d)
	cert := transporttest.NewCert(t, t.TempDir())
	p := transporttest.StartPostfix(t, transporttest.PostfixConfig{TLS: cert, Transports: map[string]string{
		"acme.example": "lmtp:inet:" + listener.Addr().String(), "cust.example": "lmtp:inet:" + dv.LMTPAddr()}})

	// 1. The customer writes to support through Postfix.
	if out, code := transporttest.Swaks(t, "--server", p.Addr(), "--tls", "--from", "customer@cust.example", "--to", "support@acme.example",
		"--header", "Message-Id: <q1@cust.example>", "--header", "Subject: my order A-17", "--body", "Where is my order?"); code != 0 {
		t.Fatalf("swaks: %d\n%s", code, out)
	}
	transporttest.Eventually(t, time.Minute, "support stores the message", func() bool { return len(transporttest.Stored(t, st, "support")) == 1 }, p.Log)

	// 2. Support answers; the reply leaves signed through the relay.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := smtp.NewRelay(smtp.RelayOptions{Addr: p.Addr(), TLSConfig: cert.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	var sender service.Sender = relay
	recs := map[string]string{}
	for _, k := range []struct {
		sel string
		key crypto.Signer
	}{{"ed", edKey}, {"rsa", rsaKey}} {
		s, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: k.sel, Key: k.key})
		if err != nil {
			t.Fatal(err)
		}
		sender = s.Sender(sender)
		recs[k.sel+"._domainkey.acme.example"], _ = dkim.PublicKeyRecord(k.key)
	}
	reply := answer(t, st, support, "q1@cust.example", "Your order A-17 ships tomorrow.")
	if err := sender.Send(ctx, reply); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkSent(ctx, reply.Seq); err != nil {
		t.Fatal(err)
	}
	transporttest.Eventually(t, time.Minute, "the reply in the customer's Dovecot mailbox", func() bool { return len(dv.Messages("customer@cust.example")) == 1 },
		func() string { return p.Log() + dv.Log() })
	delivered := bytes.ReplaceAll(bytes.ReplaceAll(dv.Messages("customer@cust.example")[0], []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	want := []string{"pass d=acme.example s=ed a=ed25519-sha256", "pass d=acme.example s=rsa a=rsa-sha256"} // the last signer's first
	if got := transporttest.VerifyDKIM(t, delivered, recs); !slices.Equal(got, want) {
		t.Errorf("dkimpy on the delivered reply: %q, want %q", got, want)
	}
	if got := header(t, delivered, "In-Reply-To"); got != "<q1@cust.example>" {
		t.Errorf("In-Reply-To %q", got)
	}
	if refs := strings.Fields(header(t, delivered, "References")); len(refs) == 0 || refs[len(refs)-1] != "<q1@cust.example>" {
		t.Errorf("References %q do not end with <q1@cust.example>", refs)
	}
	if got := header(t, delivered, "Message-Id"); got != "<"+reply.MessageID+">" {
		t.Errorf("Message-ID %q, want <%s>", got, reply.MessageID)
	}

	// 3. The customer's persona reads its mailbox over IMAP: the reply is stored once.
	r, err := imap.New(imap.Options{Addr: dv.IMAPSAddr(), TLSConfig: dv.Cert.ClientTLS(), Username: "customer@cust.example", Password: "pw", Checkpoints: st})
	if err != nil {
		t.Fatal(err)
	}
	go r.Receive(lctx, d)
	transporttest.Eventually(t, time.Minute, "the customer's persona stores the reply", func() bool { return len(transporttest.Stored(t, st, "customer")) == 1 }, dv.Log)
	transporttest.Eventually(t, 30*time.Second, "the reply flagged seen", func() bool { return slices.Equal(dv.Flags("customer@cust.example", ""), []string{"S"}) }, nil)
	if got := transporttest.Stored(t, st, "customer"); !slices.Equal(got, []string{"inbound " + reply.MessageID}) {
		t.Errorf("the customer's mailbox holds %q", got)
	}

	// The reply says Auto-Submitted: auto-replied, so the second persona stores it unanswered:
	// personas do not answer each other's replies (no mail loop).
	if m, err := st.Message(ctx, "customer", reply.MessageID); err != nil || m.NotToAnswer != "auto-submitted: Auto-Submitted: auto-replied" {
		t.Errorf("the customer's copy: not-to-answer %q, %v", m.NotToAnswer, err)
	}

	// 4. The customer answers the reply (as its mail program would: In-Reply-To and References);
	// through Postfix it reaches support and joins the first thread.
	back := "<answer1@cust.example>"
	if out, code := transporttest.Swaks(t, "--server", p.Addr(), "--from", "customer@cust.example", "--to", "support@acme.example",
		"--header", "Message-Id: "+back, "--header", "In-Reply-To: <"+reply.MessageID+">",
		"--header", "References: <q1@cust.example> <"+reply.MessageID+">", "--header", "Subject: Re: my order A-17", "--body", "Thanks!"); code != 0 {
		t.Fatalf("swaks: %d\n%s", code, out)
	}
	transporttest.Eventually(t, time.Minute, "support stores the answer", func() bool { return len(transporttest.Stored(t, st, "support")) == 3 }, p.Log)
	first, err := st.Message(ctx, "support", "q1@cust.example")
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Message(ctx, "support", strings.Trim(back, "<>"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ThreadID != first.ThreadID || got.NotToAnswer != "" {
		t.Errorf("the answer is in thread %q (not-to-answer %q), want the first thread %q", got.ThreadID, got.NotToAnswer, first.ThreadID)
	}
	if n := len(d.WaitEnvelopes(t, 3)); n != 3 {
		t.Errorf("%d deliveries, want 3 (each message once)", n)
	}
	if got := transporttest.Stored(t, st, "support"); !slices.Equal(got, []string{"inbound q1@cust.example", "outbound " + reply.MessageID, "inbound answer1@cust.example"}) {
		t.Errorf("support holds %q", got)
	}
}
