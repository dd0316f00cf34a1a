package imap_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/imap"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
)

const user = "customer@cust.example"

var customer = transporttest.Persona("customer", user)

func message(id string) []byte {
	return []byte(fmt.Sprintf("From: Support <support@acme.example>\r\nTo: %s\r\nSubject: Re: my order\r\nMessage-ID: <%s>\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\nIt ships tomorrow.\r\n", user, id))
}

// TestMain runs a receiver as a child process when asked (see runChild).
func TestMain(m *testing.M) {
	if role := os.Getenv(transporttest.ChildEnv); role != "" {
		runChild(role)
		return
	}
	os.Exit(m.Run())
}

// runChild runs a receiver of $IMAP_ADDR (plain, customer's INBOX) over the store at $DSN. Role
// "receiver" delivers normally; "stop-before-commit" prints "FETCHED" when a fetched message is
// about to be stored and hangs; "stop-after-commit" prints "COMMITTED" once it is stored and
// hangs before the receiver could flag it \Seen.
func runChild(role string) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	st, err := store.Open(ctx, os.Getenv("DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	d := transporttest.NewDeliverer(st, customer)
	hang := func(line string) {
		fmt.Println(line)
		select {}
	}
	switch role {
	case "stop-before-commit":
		d.BeforeDeliver = func(service.Envelope) { hang("FETCHED") }
	case "stop-after-commit":
		d.AfterCommit = func(*mail.Ingested) { hang("COMMITTED") }
	}
	r, err := imap.New(imap.Options{Addr: os.Getenv("IMAP_ADDR"), TLS: imap.NoTLS, Username: user, Password: "pw", Checkpoints: st, MinBackoff: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("READY")
	if err := r.Receive(ctx, d); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// receive runs a receiver with o (for customer, with d's store as checkpoints) until the test
// ends.
func receive(t *testing.T, o imap.Options, d *transporttest.Deliverer) {
	t.Helper()
	o.Username, o.Checkpoints = user, d.Store
	if o.Password == "" {
		o.Password = "pw"
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	r, err := imap.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Receive(ctx, d) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Receive: %v", err)
		}
	})
}

func storedIDs(t *testing.T, d *transporttest.Deliverer) []string {
	return transporttest.Stored(t, d.Store, "customer")
}

func waitStored(t *testing.T, d *transporttest.Deliverer, dv *transporttest.Dovecot, n int) {
	t.Helper()
	transporttest.Eventually(t, time.Minute, fmt.Sprintf("%d messages stored", n), func() bool { return len(storedIDs(t, d)) >= n }, dv.Log)
}

func TestReceiverDeliversThenFlagsSeen(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode imap.TLSMode
		addr func(*transporttest.Dovecot) string
		idle bool
	}{
		{"implicit TLS, IDLE", imap.ImplicitTLS, (*transporttest.Dovecot).IMAPSAddr, true},
		{"STARTTLS, polling", imap.StartTLS, (*transporttest.Dovecot).IMAPAddr, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
			dv.Deliver(user, message("m1@acme.example"))
			dv.Deliver(user, message("m2@acme.example"))
			d := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), customer)
			o := imap.Options{Addr: tt.addr(dv), TLS: tt.mode, TLSConfig: dv.Cert.ClientTLS(), DisableIdle: !tt.idle, PollInterval: 200 * time.Millisecond,
				Recipients: []string{user}}
			receive(t, o, d)
			waitStored(t, d, dv, 2)
			dv.Deliver(user, message("m3@acme.example")) // noticed by IDLE, or by the next poll
			waitStored(t, d, dv, 3)
			if got := storedIDs(t, d); !slices.Equal(got, []string{"inbound m1@acme.example", "inbound m2@acme.example", "inbound m3@acme.example"}) {
				t.Errorf("stored %q", got)
			}
			transporttest.Eventually(t, 30*time.Second, "all flagged seen", func() bool { return slices.Equal(dv.Flags(user, ""), []string{"S", "S", "S"}) },
				func() string { return fmt.Sprint(dv.Flags(user, "")) })
			// The checkpoint moves past a message right after its flag.
			transporttest.Eventually(t, 30*time.Second, "the checkpoint at UID 3", func() bool {
				cp, ok, err := d.Store.ReceiverCheckpoint(context.Background(), "imap://"+user+"@"+tt.addr(dv)+"/INBOX")
				return err == nil && ok && cp.LastUID == 3 && cp.UIDValidity != 0
			}, nil)
			for _, env := range d.Envelopes() {
				if env.Source != "imap:INBOX" || !slices.Equal(env.Recipients, []string{user}) {
					t.Errorf("envelope %+v", env)
				}
			}
			if n := len(d.Envelopes()); n != 3 {
				t.Errorf("%d deliveries, want 3", n)
			}
		})
	}
}

func TestReceiverMovesAndPassesByTooLargeMessages(t *testing.T) {
	dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
	dv.Deliver(user, append(message("big@acme.example"), strings.Repeat("0123456789\r\n", 500)...))
	dv.Deliver(user, message("m1@acme.example"))
	d := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), customer)
	receive(t, imap.Options{Addr: dv.IMAPAddr(), TLS: imap.NoTLS, MoveTo: "Processed", MaxMessageBytes: 2000, PollInterval: 200 * time.Millisecond}, d)
	waitStored(t, d, dv, 1)
	// A move shows in Processed before it is expunged from INBOX: wait for both.
	transporttest.Eventually(t, 30*time.Second, "the delivered message moved", func() bool {
		return len(dv.Flags(user, "Processed")) == 1 && len(dv.Flags(user, "")) == 1
	}, nil)
	if got := storedIDs(t, d); !slices.Equal(got, []string{"inbound m1@acme.example"}) {
		t.Errorf("stored %q", got)
	}
	if got := dv.Flags(user, ""); len(got) != 1 || strings.Contains(got[0], "S") {
		t.Errorf("INBOX flags %q: want the too large message left there, unseen", got)
	}
}

func TestReceiverStartsOverWhenUIDValidityChanged(t *testing.T) {
	dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
	dv.Deliver(user, message("m1@acme.example"))
	dv.Deliver(user, message("m2@acme.example"))
	d := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), customer)
	name := "imap://" + user + "@" + dv.IMAPAddr() + "/INBOX"
	if err := d.Store.SaveReceiverCheckpoint(context.Background(), name, store.Checkpoint{UIDValidity: 1, LastUID: 99}); err != nil {
		t.Fatal(err)
	}
	receive(t, imap.Options{Addr: dv.IMAPAddr(), TLS: imap.NoTLS, PollInterval: 200 * time.Millisecond}, d)
	waitStored(t, d, dv, 2)
	transporttest.Eventually(t, 30*time.Second, "the checkpoint at the mailbox's UIDVALIDITY and UID 2", func() bool {
		cp, _, _ := d.Store.ReceiverCheckpoint(context.Background(), name)
		return cp.UIDValidity != 1 && cp.LastUID == 2
	}, nil)
}

func TestReceiverReconnectsAfterTheServerDropsIt(t *testing.T) {
	dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
	dv.Deliver(user, message("m1@acme.example"))
	d := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), customer)
	receive(t, imap.Options{Addr: dv.IMAPAddr(), TLS: imap.NoTLS}, d)
	waitStored(t, d, dv, 1)
	dv.Kick(user)
	dv.Deliver(user, message("m2@acme.example"))
	waitStored(t, d, dv, 2)
	if n := len(d.WaitEnvelopes(t, 2)); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
}

func TestReceiverStopsOnARefusedLogin(t *testing.T) {
	dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
	d := transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), customer)
	r, err := imap.New(imap.Options{Addr: dv.IMAPAddr(), TLS: imap.NoTLS, Username: user, Password: "wrong", Checkpoints: d.Store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Receive(ctx, d); err == nil || !strings.Contains(err.Error(), "imap: login refused: "+user) {
		t.Errorf("Receive = %v, want the refused login", err)
	}
}

// TestKilledReceiverLosesNothingAndStoresOnce kills the receiver's process with SIGKILL after
// it fetched a message and before it stored it, and after it stored it but before it flagged it
// \Seen: the restarted receiver stores the message once and flags it.
func TestKilledReceiverLosesNothingAndStoresOnce(t *testing.T) {
	for _, tt := range []struct {
		role, line string
		stored     int
	}{{"stop-before-commit", "FETCHED", 0}, {"stop-after-commit", "COMMITTED", 1}} {
		t.Run(tt.role, func(t *testing.T) {
			dv := transporttest.StartDovecot(t, map[string]string{user: "pw"})
			dv.Deliver(user, message("m1@acme.example"))
			dsn := transporttest.ScratchDSN(t, store.DialectSQLite)
			env := []string{"DSN=" + dsn, "IMAP_ADDR=" + dv.IMAPAddr()}
			child := transporttest.StartChild(t, tt.role, env...)
			child.WaitLine(tt.line)
			child.Kill()
			st := transporttest.Open(t, dsn)
			if n := len(transporttest.Stored(t, st, "customer")); n != tt.stored {
				t.Fatalf("after the kill %d stored, want %d", n, tt.stored)
			}
			if got := dv.Flags(user, ""); len(got) != 1 || got[0] != "" {
				t.Fatalf("after the kill the flags are %q, want the message unseen", got)
			}
			restarted := transporttest.StartChild(t, "receiver", env...)
			restarted.WaitLine("READY")
			transporttest.Eventually(t, time.Minute, "flagged seen", func() bool { return slices.Equal(dv.Flags(user, ""), []string{"S"}) }, dv.Log)
			if got := transporttest.Stored(t, st, "customer"); !slices.Equal(got, []string{"inbound m1@acme.example"}) {
				t.Errorf("stored %q, want the message once", got)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want imap.Options
		err  string
	}{
		{"imaps://me%40cust.example:p%2Fw@mail.cust.example/INBOX", imap.Options{Addr: "mail.cust.example:993", TLS: imap.ImplicitTLS, Username: "me@cust.example", Password: "p/w", Mailboxes: []string{"INBOX"}}, ""},
		{"imap://me:pw@127.0.0.1:1143/?mailbox=Support&mailbox=Sales&move=Done&tls=none", imap.Options{Addr: "127.0.0.1:1143", TLS: imap.NoTLS, Username: "me", Password: "pw",
			Mailboxes: []string{"Support", "Sales"}, MoveTo: "Done"}, ""},
		{"imap://me:pw@host", imap.Options{Addr: "host:143", TLS: imap.StartTLS, Username: "me", Password: "pw"}, ""},
		{"pop3://me:pw@host", imap.Options{}, `scheme "pop3"`},
		{"imaps://host/INBOX", imap.Options{}, "want a user and a host"},
		{"imaps://me:pw@host/?tls=none", imap.Options{}, "tls=none with imaps"},
		{"imaps://me:pw@host/?folder=x", imap.Options{}, `unknown parameter "folder"`},
	}
	for _, tt := range tests {
		got, err := imap.ParseURL(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseURL(%q) = %v, want an error with %q", tt.url, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("ParseURL(%q): the error shows the password: %v", tt.url, err)
			}
			continue
		}
		if err != nil || got.Addr != tt.want.Addr || got.TLS != tt.want.TLS || got.Username != tt.want.Username || got.Password != tt.want.Password ||
			!slices.Equal(got.Mailboxes, tt.want.Mailboxes) || got.MoveTo != tt.want.MoveTo {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tt.url, got, err, tt.want)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	st := transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite))
	for _, o := range []imap.Options{
		{Username: "u", Checkpoints: st},
		{Addr: "h:993", Checkpoints: st},
		{Addr: "h:993", Username: "u"},
		{Addr: "h:993", Username: "u", Checkpoints: st, Mailboxes: []string{"INBOX"}, MoveTo: "INBOX"},
		{Addr: "h:993", Username: "u", Checkpoints: st, PollInterval: -1},
		{Addr: "h:993", Username: "u", Checkpoints: st, Name: strings.Repeat("n", 190)},
	} {
		if _, err := imap.New(o); err == nil {
			t.Errorf("New(%+v) did not fail", o)
		}
	}
}

// FuzzParseURL: any input either fails or gives options New accepts (with checkpoints), an
// address with a port, and no empty mailbox.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"imaps://me:pw@host/INBOX", "imap://me:pw@127.0.0.1:1143/?mailbox=A&move=B&tls=none", "imap://@/", "imaps://u@h/%2F", "imap://u:p@[::1]:143/x?mailbox="} {
		f.Add(s)
	}
	st := transporttest.Open(f, transporttest.ScratchDSN(f, store.DialectSQLite))
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := imap.ParseURL(raw)
		if err != nil {
			return
		}
		o.Checkpoints = st
		if _, err := imap.New(o); err != nil && !strings.Contains(err.Error(), "mailbox") && !strings.Contains(err.Error(), "checkpoint name") {
			t.Errorf("ParseURL(%q) = %+v, which New refuses: %v", raw, o, err)
		}
	})
}
