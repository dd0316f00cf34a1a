package smtp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

var (
	support = transporttest.Persona("support", "support@acme.example", "help@acme.example")
	sales   = transporttest.Persona("sales", "sales@acme.example")
)

// listen starts a listener with o (Addr 127.0.0.1:0 unless set) delivering into d, stopped
// when the test ends.
func listen(t *testing.T, o smtp.Options, d service.Deliverer) *smtp.Listener {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	l, err := smtp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Receive(ctx, d) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Receive: %v", err)
		}
	})
	return l
}

// storeDeliverer returns a Deliverer over a fresh SQLite store for support and sales.
func storeDeliverer(t *testing.T) *transporttest.Deliverer {
	t.Helper()
	return transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), support, sales)
}

// swaks runs swaks against l with args.
func swaks(t *testing.T, l *smtp.Listener, args ...string) (string, int) {
	t.Helper()
	return transporttest.Swaks(t, append([]string{"--server", l.Addr().String()}, args...)...)
}

// last returns the last n server replies of a transcript, each cut to its code and first words.
func last(transcript string, n int) []string {
	r := transporttest.Replies(transcript)
	if len(r) > n {
		r = r[len(r)-n:]
	}
	return r
}

func TestListenerStoresPipelinedMailThenSays250(t *testing.T) {
	for _, d := range transporttest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			dl := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, d)), support, sales)
			l := listen(t, smtp.Options{Domain: "mx.acme.example"}, dl)
			out, code := swaks(t, l, "--pipeline", "--from", "ann@cust.example", "--to", "support+orders@acme.example,sales@acme.example",
				"--header", "Message-Id: <q1@cust.example>", "--header", "Subject: my order", "--body", "Where is it?")
			if code != 0 {
				t.Fatalf("swaks exit %d:\n%s", code, out)
			}
			if !strings.Contains(out, "PIPELINING") || !strings.Contains(out, "SIZE 26214400") || !strings.Contains(out, "LIMITS RCPTMAX=100") {
				t.Errorf("EHLO does not advertise PIPELINING, SIZE 26214400 and RCPTMAX=100:\n%s", out)
			}
			if got := last(out, 2); !slices.Equal(got, []string{"250 2.0.0 OK: queued", "221 2.0.0 Bye"}) {
				t.Errorf("last replies %q", got)
			}
			for _, box := range []string{"support", "sales"} {
				if got := transporttest.Stored(t, dl.Store, box); !slices.Equal(got, []string{"inbound q1@cust.example"}) {
					t.Errorf("%s holds %q", box, got)
				}
			}
			env := dl.Envelopes()
			if len(env) != 1 || env[0].Sender != "ann@cust.example" || env[0].Source != "smtp" ||
				!slices.Equal(env[0].Recipients, []string{"support+orders@acme.example", "sales@acme.example"}) {
				t.Errorf("envelopes %+v", env)
			}
			// The same message again (a client that missed the 250): 250, nothing stored twice.
			if out, code := swaks(t, l, "--from", "ann@cust.example", "--to", "support@acme.example",
				"--header", "Message-Id: <q1@cust.example>", "--body", "Where is it?"); code != 0 {
				t.Fatalf("second delivery: exit %d\n%s", code, out)
			}
			if got := transporttest.Stored(t, dl.Store, "support"); len(got) != 1 {
				t.Errorf("after a redelivery support holds %q", got)
			}
		})
	}
}

func TestListenerRefusesWhatItMustNotStore(t *testing.T) {
	dl := storeDeliverer(t)
	l := listen(t, smtp.Options{MaxMessageBytes: 2000, MaxRecipients: 2}, dl)
	tests := []struct {
		name string
		args []string
		want []string // the last replies
	}{
		{"an unknown recipient", []string{"--to", "stranger@acme.example"},
			[]string{"550 5.1.1 <stranger@acme.example>: Recipient address rejected: no such persona here", "221 2.0.0 Bye"}},
		{"a relay attempt", []string{"--to", "bob@elsewhere.example"},
			[]string{"550 5.1.1 <bob@elsewhere.example>: Recipient address rejected: no such persona here", "221 2.0.0 Bye"}},
		{"an oversized message", []string{"--to", "support@acme.example", "--body", strings.Repeat("0123456789\n", 300)},
			[]string{"552 5.3.4 Message size exceeds the limit", "221 2.0.0 Bye"}},
	}
	for _, tt := range tests {
		out, code := swaks(t, l, append([]string{"--from", "ann@cust.example", "--header", "Message-Id: <" + strings.ReplaceAll(tt.name, " ", "-") + "@cust.example>"}, tt.args...)...)
		if code == 0 {
			t.Errorf("%s: swaks succeeded:\n%s", tt.name, out)
		}
		if got := last(out, 2); !slices.Equal(got, tt.want) {
			t.Errorf("%s: last replies %q, want %q", tt.name, got, tt.want)
		}
	}
	// A third recipient is deferred (the client sends it in another transaction).
	replies := talk(t, l.Addr().String(), "EHLO x", "MAIL FROM:<ann@cust.example> SIZE=5000", "MAIL FROM:<ann@cust.example>",
		"RCPT TO:<support@acme.example>", "RCPT TO:<sales@acme.example>", "RCPT TO:<help@acme.example>", "QUIT")
	want := []string{"552 5.3.4 Max message size exceeded", "250 2.0.0 Roger, accepting mail from <ann@cust.example>",
		"250 2.0.0 I'll make sure <support@acme.example> gets this", "250 2.0.0 I'll make sure <sales@acme.example> gets this",
		"452 4.5.3 Maximum limit of 2 recipients reached", "221 2.0.0 Bye"}
	if !slices.Equal(replies[2:], want) {
		t.Errorf("replies %q, want %q", replies[2:], want)
	}
	for _, box := range []string{"support", "sales"} {
		if got := transporttest.Stored(t, dl.Store, box); len(got) != 0 {
			t.Errorf("%s holds %q after refusals", box, got)
		}
	}
}

// talk sends each command on a fresh connection and returns the greeting and each reply's last
// line; a command "DATA:<text>" sends DATA, then text and the end of data.
func talk(t *testing.T, addr string, cmds ...string) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	read := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return "read: " + err.Error()
			}
			line = strings.TrimRight(line, "\r\n")
			if len(line) < 4 || line[3] != '-' {
				return line
			}
		}
	}
	out := []string{read()}
	for _, cmd := range cmds {
		if text, ok := strings.CutPrefix(cmd, "DATA:"); ok {
			fmt.Fprintf(c, "DATA\r\n")
			out = append(out, read())
			fmt.Fprintf(c, "%s\r\n.\r\n", strings.ReplaceAll(text, "\n", "\r\n"))
			out = append(out, read())
			continue
		}
		fmt.Fprintf(c, "%s\r\n", cmd)
		out = append(out, read())
	}
	return out
}

// fakeDeliverer accepts support and sales and answers Deliver with err, after reading the message.
type fakeDeliverer struct {
	err        error
	deliveries []mail.Delivered
	mu         sync.Mutex
	raw        []string
}

func (f *fakeDeliverer) Deliver(_ context.Context, r io.Reader, _ service.Envelope) (*mail.Ingested, error) {
	b, err := io.ReadAll(r)
	f.mu.Lock()
	f.raw = append(f.raw, string(b))
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &mail.Ingested{Deliveries: f.deliveries}, f.err
}

func (f *fakeDeliverer) Accepts(a string) *runtime.Persona {
	return mail.PersonaFor([]*runtime.Persona{support, sales}, a)
}

func TestListenerAnswersDeliverErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"delivered", nil, "250 2.0.0 OK: queued"},
		{"a store error", errors.New("store: database is locked"), "451 4.3.0 Message not stored, try again later"},
		{"larger than the parser takes", fmt.Errorf("ingest: %w: more than 10 bytes", mail.ErrTooLarge), "552 5.3.4 Message size exceeds the limit"},
		{"a permanent refusal", service.Permanent(errors.New("no thanks")), "554 5.6.0 Message refused: no thanks"},
	}
	for _, tt := range tests {
		f := &fakeDeliverer{err: tt.err}
		l := listen(t, smtp.Options{}, f)
		got := talk(t, l.Addr().String(), "EHLO x", "MAIL FROM:<>", "RCPT TO:<Support@ACME.example>", "DATA:Subject: hi\n\n..dot-stuffed\nbody", "QUIT")
		if want := []string{"354 Go ahead. End your data with <CR><LF>.<CR><LF>", tt.want, "221 2.0.0 Bye"}; !slices.Equal(got[4:], want) {
			t.Errorf("%s: replies %q, want %q", tt.name, got[4:], want)
		}
		if want := "Return-Path: <>\r\nSubject: hi\r\n\r\n.dot-stuffed\r\nbody\r\n"; len(f.raw) != 1 || f.raw[0] != want {
			t.Errorf("%s: delivered %q, want %q", tt.name, f.raw, want)
		}
	}
}

func TestLMTPAnswersEachRecipient(t *testing.T) {
	f := &fakeDeliverer{err: errors.New("store: gone"), deliveries: []mail.Delivered{{Delivery: mail.Delivery{Persona: support}}}}
	l := listen(t, smtp.Options{LMTP: true}, f)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(c, "LHLO x\r\nMAIL FROM:<ann@cust.example>\r\nRCPT TO:<help@acme.example>\r\nRCPT TO:<sales@acme.example>\r\nDATA\r\n")
	r := bufio.NewReader(c)
	var lines []string
	for len(lines) < 40 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		lines = append(lines, strings.TrimRight(line, "\r\n"))
		if strings.HasPrefix(line, "354") {
			fmt.Fprint(c, "Subject: hi\r\n\r\nbody\r\n.\r\nQUIT\r\n")
		}
		if strings.HasPrefix(line, "221") {
			break
		}
	}
	tail := lines[len(lines)-3:]
	want := []string{"250 2.0.0 <help@acme.example> OK: queued", "451 4.3.0 <sales@acme.example> Message not stored, try again later", "221 2.0.0 Bye"}
	if !slices.Equal(tail, want) {
		t.Errorf("LMTP replies %q, want %q", tail, want)
	}
}

func TestListenerSpeaksLMTPToSwaks(t *testing.T) {
	dl := storeDeliverer(t)
	l := listen(t, smtp.Options{LMTP: true}, dl)
	out, code := swaks(t, l, "--protocol", "LMTP", "--from", "ann@cust.example", "--to", "support@acme.example,sales@acme.example",
		"--header", "Message-Id: <l1@cust.example>")
	if code != 0 {
		t.Fatalf("swaks exit %d:\n%s", code, out)
	}
	if got := last(out, 3); !slices.Equal(got, []string{"250 2.0.0 <support@acme.example> OK: queued", "250 2.0.0 <sales@acme.example> OK: queued", "221 2.0.0 Bye"}) {
		t.Errorf("last replies %q", got)
	}
	if got := dl.Envelopes(); len(got) != 1 || got[0].Source != "lmtp" {
		t.Errorf("envelopes %+v", got)
	}
}

func TestListenerOffersSTARTTLSAndAuth(t *testing.T) {
	cert := transporttest.NewCert(t, t.TempDir())
	dl := storeDeliverer(t)
	auth := func(user, pass string) error {
		if user == "mta" && pass == "s3cret" {
			return nil
		}
		return errors.New("bad credentials")
	}
	l := listen(t, smtp.Options{TLS: cert.ServerTLS(), Auth: auth}, dl)
	base := []string{"--from", "ann@cust.example", "--to", "support@acme.example"}
	out, code := swaks(t, l, append(base, "--tls", "--auth", "PLAIN", "--auth-user", "mta", "--auth-password", "s3cret", "--header", "Message-Id: <t1@cust.example>")...)
	if code != 0 || !strings.Contains(out, "220 2.0.0 Ready to start TLS") || !strings.Contains(out, "235 2.0.0 Authentication succeeded") {
		t.Fatalf("STARTTLS and AUTH: exit %d\n%s", code, out)
	}
	out, code = swaks(t, l, append(base, "--tls", "--auth", "PLAIN", "--auth-user", "mta", "--auth-password", "wrong")...)
	if code == 0 || !strings.Contains(out, "535 5.7.8 Authentication failed") {
		t.Errorf("a wrong password: exit %d\n%s", code, out)
	}
	out, code = swaks(t, l, append(base, "--tls")...)
	if code == 0 || !strings.Contains(out, "530 5.7.0 Authentication required") {
		t.Errorf("no AUTH: exit %d\n%s", code, out)
	}
	// Without TLS, AUTH is not offered (AllowInsecureAuth is off).
	out, code = swaks(t, l, append(base, "--auth", "PLAIN", "--auth-user", "mta", "--auth-password", "s3cret")...)
	if code == 0 || strings.Contains(out, "AUTH PLAIN") {
		t.Errorf("AUTH without TLS: exit %d\n%s", code, out)
	}
	if got := transporttest.Stored(t, dl.Store, "support"); !slices.Equal(got, []string{"inbound t1@cust.example"}) {
		t.Errorf("support holds %q", got)
	}
}

func TestListenerLimitsConnectionsAndTheirTime(t *testing.T) {
	l := listen(t, smtp.Options{MaxConnections: 1, MaxSessionTime: time.Second}, &fakeDeliverer{})
	first, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(first)
	if greeting, _ := r.ReadString('\n'); !strings.HasPrefix(greeting, "220 ") {
		t.Fatalf("greeting %q", greeting)
	}
	if got := talk(t, l.Addr().String()); !slices.Equal(got, []string{"421 4.7.0 localhost Too many connections, try again later"}) {
		t.Errorf("second connection: %q", got)
	}
	// The first connection's session ends: 421 and closed, and its slot is free again.
	if end, _ := r.ReadString('\n'); end != "421 4.4.2 Idle timeout, bye bye\r\n" {
		t.Errorf("at the end of the session: %q", end)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("the connection stayed open after its session ended")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := talk(t, l.Addr().String(), "QUIT")
		if strings.HasPrefix(got[0], "220 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestListenerRefusesLongLines(t *testing.T) {
	f := &fakeDeliverer{}
	l := listen(t, smtp.Options{MaxLineLength: 100}, f)
	got := talk(t, l.Addr().String(), "EHLO x", "MAIL FROM:<ann@cust.example>", "RCPT TO:<support@acme.example>", "DATA:Subject: x\n\n"+strings.Repeat("y", 200))
	if want := "554 5.6.0 Message refused: a line is longer than 100 octets"; got[len(got)-1] != want {
		t.Errorf("replies %q, want the last %q", got, want)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []smtp.Options{
		{Addr: "127.0.0.1:0", MaxMessageBytes: -1},
		{Addr: "127.0.0.1:0", ImplicitTLS: true},
		{Addr: "no-port"},
		{Addr: "unix:"},
	} {
		if l, err := smtp.New(o); err == nil {
			t.Errorf("New(%+v) = %v, want an error", o, l.Addr())
		}
	}
	l, err := smtp.New(smtp.Options{Addr: ":0"})
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(l.Addr().String()); host != "127.0.0.1" {
		t.Errorf("an address without a host listens on %s, want 127.0.0.1", host)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Receive(ctx, &fakeDeliverer{}); err != nil {
		t.Errorf("Receive after the context ended: %v", err)
	}
	if err := l.Receive(context.Background(), &fakeDeliverer{}); err == nil {
		t.Error("a second Receive did not fail")
	}
	// Close releases a listener never served: its address can be bound again.
	unused, err := smtp.New(smtp.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := unused.Addr().String()
	if err := unused.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := smtp.New(smtp.Options{Addr: addr})
	if err != nil {
		t.Fatalf("binding %s again after Close: %v", addr, err)
	}
	again.Close()
}
