package smtp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

// relayServer is a scripted SMTP server: it records each transaction and answers as told.
type relayServer struct {
	mu       sync.Mutex
	rcptErr  map[string]error // by recipient
	mailErr  error
	dataErrs []error // the answer to each DATA in turn (nil: 250); past the end, 250
	auth     bool
	got      []transaction
	addr     string
}

type transaction struct {
	from  string
	rcpts []string
	data  []byte
	authd bool
}

type relaySession struct {
	s *relayServer
	t transaction
}

func (s *relaySession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "persona" || pass != "pw" {
			return gosmtp.ErrAuthFailed
		}
		s.t.authd = true
		return nil
	}), nil
}
func (s *relaySession) Reset()        { s.t = transaction{authd: s.t.authd} }
func (s *relaySession) Logout() error { return nil }
func (s *relaySession) Mail(from string, _ *gosmtp.MailOptions) error {
	s.t.from = from
	return s.s.mailErr
}
func (s *relaySession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if err := s.s.rcptErr[to]; err != nil {
		return err
	}
	s.t.rcpts = append(s.t.rcpts, to)
	return nil
}
func (s *relaySession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	var answer error
	if len(s.s.dataErrs) > 0 {
		answer, s.s.dataErrs = s.s.dataErrs[0], s.s.dataErrs[1:]
	}
	if answer == nil {
		s.t.data = b
		s.s.got = append(s.s.got, s.t)
	}
	return answer
}

// startRelay serves s on 127.0.0.1; with cert, STARTTLS (or, with implicit, TLS from the start).
func startRelay(t *testing.T, s *relayServer, cert *transporttest.Cert, implicit bool) {
	t.Helper()
	srv := gosmtp.NewServer(gosmtp.BackendFunc(func(*gosmtp.Conn) (gosmtp.Session, error) {
		rs := &relaySession{s: s}
		if s.auth {
			return rs, nil
		}
		return struct{ gosmtp.Session }{rs}, nil
	}))
	srv.Domain = "relay.example"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = discardLog{}
	var ln net.Listener
	var err error
	if cert != nil && implicit {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", cert.ServerTLS())
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if cert != nil {
			srv.TLSConfig = cert.ServerTLS()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

type discardLog struct{}

func (discardLog) Printf(string, ...any) {}
func (discardLog) Println(...any)        {}

func smtpErr(code int, enh gosmtp.EnhancedCode, text string) error {
	return &gosmtp.SMTPError{Code: code, EnhancedCode: enh, Message: text}
}

// outgoing is a rendered reply to ann and bob.
func outgoing(t *testing.T) service.Outgoing {
	t.Helper()
	id := mail.ReplyMessageID("run-1", "support@acme.example")
	raw, err := mail.Render(&history.Message{MessageID: id, From: "Support <support@acme.example>", To: []string{"ann@cust.example", "bob@cust.example"},
		Subject: "Re: hi", Date: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), Text: "Hello.\n"})
	if err != nil {
		t.Fatal(err)
	}
	return service.Outgoing{Persona: support, Seq: 3, MessageID: id, From: "support@acme.example", To: []string{"ann@cust.example", "bob@cust.example"}, Raw: raw, Attempt: 1}
}

func relay(t *testing.T, o smtp.RelayOptions) *smtp.Relay {
	t.Helper()
	r, err := smtp.NewRelay(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRelaySendsTheRenderedBytesUnchanged(t *testing.T) {
	s := &relayServer{dataErrs: []error{smtpErr(451, gosmtp.EnhancedCode{4, 3, 0}, "queue full")}}
	startRelay(t, s, nil, false)
	r := relay(t, smtp.RelayOptions{Addr: s.addr, TLS: smtp.NoTLS, HELO: "persona.acme.example"})
	m := outgoing(t)
	err := r.Send(context.Background(), m)
	if err == nil || service.IsPermanent(err) || !strings.Contains(err.Error(), "the end of the message: 451 4.3.0 queue full") {
		t.Fatalf("first attempt: %v, want a transient error with the server's 451", err)
	}
	m.Attempt = 2
	if err := r.Send(context.Background(), m); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if len(s.got) != 1 {
		t.Fatalf("%d transactions delivered, want 1", len(s.got))
	}
	got := s.got[0]
	wantFrom := "support+bounce-" + strings.TrimSuffix(m.MessageID, "@acme.example") + "@acme.example"
	if got.from != wantFrom || !slices.Equal(got.rcpts, m.To) {
		t.Errorf("envelope MAIL FROM:<%s> RCPT %q, want <%s> %q", got.from, got.rcpts, wantFrom, m.To)
	}
	if !bytes.Equal(got.data, m.Raw) {
		t.Errorf("relay received other bytes:\n%s\nwant\n%s", got.data, m.Raw)
	}
	if n := bytes.Count(got.data, []byte("Message-Id:")) + bytes.Count(got.data, []byte("Message-ID:")); n != 1 {
		t.Errorf("%d Message-ID headers", n)
	}
}

func TestRelayClassifiesRefusals(t *testing.T) {
	userUnknown := smtpErr(550, gosmtp.EnhancedCode{5, 1, 1}, "<bob@cust.example>: Recipient address rejected: User unknown")
	tests := []struct {
		name      string
		server    relayServer
		permanent bool
		want      string   // in the error; "" for success
		delivered []string // recipients of the delivered transaction
	}{
		{"550 to every recipient", relayServer{rcptErr: map[string]error{"ann@cust.example": userUnknown, "bob@cust.example": userUnknown}}, true,
			"every recipient refused: RCPT TO:<ann@cust.example>: 550 5.1.1 <bob@cust.example>: Recipient address rejected: User unknown; RCPT TO:<bob@cust.example>: 550 5.1.1", nil},
		{"550 to one of two: sent to the other", relayServer{rcptErr: map[string]error{"bob@cust.example": userUnknown}}, false, "", []string{"ann@cust.example"}},
		{"452 to one: nobody now", relayServer{rcptErr: map[string]error{"bob@cust.example": smtpErr(452, gosmtp.EnhancedCode{4, 5, 3}, "too many recipients")}}, false,
			"RCPT TO:<bob@cust.example>: 452 4.5.3 too many recipients", nil},
		{"554 to MAIL FROM", relayServer{mailErr: smtpErr(554, gosmtp.EnhancedCode{5, 7, 1}, "sender refused")}, true, "MAIL FROM:<support+bounce-", nil},
		{"550 to the message", relayServer{dataErrs: []error{smtpErr(550, gosmtp.EnhancedCode{5, 7, 1}, "spam")}}, true, "the end of the message: 550 5.7.1 spam", nil},
	}
	for i := range tests {
		tt := &tests[i]
		s := &tt.server
		startRelay(t, s, nil, false)
		err := relay(t, smtp.RelayOptions{Addr: s.addr, TLS: smtp.NoTLS}).Send(context.Background(), outgoing(t))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
		case err != nil && service.IsPermanent(err) != tt.permanent:
			t.Errorf("%s: permanent %v, want %v (%v)", tt.name, service.IsPermanent(err), tt.permanent, err)
		}
		var delivered []string
		if len(s.got) == 1 {
			delivered = s.got[0].rcpts
		}
		if !slices.Equal(delivered, tt.delivered) || len(s.got) > 1 {
			t.Errorf("%s: delivered %d transactions to %q, want %q", tt.name, len(s.got), delivered, tt.delivered)
		}
	}
}

func TestRelayNetworkAndTLSErrorsAreTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	plain := &relayServer{}
	startRelay(t, plain, nil, false)
	cert := transporttest.NewCert(t, t.TempDir())
	untrusted := &relayServer{}
	startRelay(t, untrusted, cert, false)
	tests := []struct {
		name string
		o    smtp.RelayOptions
		want string
	}{
		{"nothing listening", smtp.RelayOptions{Addr: closed, TLS: smtp.NoTLS, Timeout: 5 * time.Second}, "connection refused"},
		{"STARTTLS required, not offered", smtp.RelayOptions{Addr: plain.addr}, "does not support STARTTLS"},
		{"an untrusted certificate", smtp.RelayOptions{Addr: untrusted.addr}, "certificate"},
		{"a wrong password", smtp.RelayOptions{Addr: plain.addr, TLS: smtp.NoTLS, Username: "persona", Password: "nope"}, "AUTH"},
	}
	for _, tt := range tests {
		err := relay(t, tt.o).Send(context.Background(), outgoing(t))
		if err == nil || service.IsPermanent(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a transient error with %q", tt.name, err, tt.want)
		}
	}
	if len(plain.got)+len(untrusted.got) != 0 {
		t.Errorf("delivered %d", len(plain.got)+len(untrusted.got))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := relay(t, smtp.RelayOptions{Addr: plain.addr, TLS: smtp.NoTLS}).Send(ctx, outgoing(t)); err == nil || service.IsPermanent(err) {
		t.Errorf("an ended context: %v, want a transient error", err)
	}
}

func TestRelaySpeaksTLSAndAuth(t *testing.T) {
	cert := transporttest.NewCert(t, t.TempDir())
	for _, mode := range []smtp.TLSMode{smtp.StartTLS, smtp.ImplicitTLS, smtp.OpportunisticTLS} {
		s := &relayServer{auth: true}
		startRelay(t, s, cert, mode == smtp.ImplicitTLS)
		tlsConfig := cert.ClientTLS()
		r := relay(t, smtp.RelayOptions{Addr: s.addr, TLS: mode, TLSConfig: tlsConfig, Username: "persona", Password: "pw"})
		if err := r.Send(context.Background(), outgoing(t)); err != nil {
			t.Errorf("mode %d: %v", mode, err)
			continue
		}
		if len(s.got) != 1 || !s.got[0].authd {
			t.Errorf("mode %d: transactions %+v, want one authenticated", mode, s.got)
		}
	}
}

func TestNewRelayRefusesBadOptions(t *testing.T) {
	for _, o := range []smtp.RelayOptions{{}, {Addr: "relay.example"}, {Addr: ":25"}, {Addr: "relay.example:0"}, {Addr: "relay.example:x"},
		{Addr: "relay.example:25", Timeout: -1}, {Addr: "relay.example:25", TLS: smtp.TLSMode(9)}} {
		if _, err := smtp.NewRelay(o); err == nil {
			t.Errorf("NewRelay(%+v) did not fail", o)
		}
	}
	r := relay(t, smtp.RelayOptions{Addr: "127.0.0.1:25"})
	m := outgoing(t)
	m.To = nil
	if err := r.Send(context.Background(), m); !service.IsPermanent(err) {
		t.Errorf("no recipients: %v, want a permanent error", err)
	}
	m = outgoing(t)
	m.To = []string{"ann@cust.example\r\nRCPT TO:<x@y>"}
	if err := r.Send(context.Background(), m); !service.IsPermanent(err) {
		t.Errorf("a line break in an address: %v, want a permanent error", err)
	}
}
