package store

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// The store is the BounceStore mail.RecordBounce marks replies through.
var _ mail.BounceStore = (*Store)(nil)

func TestMarkBouncedRecordsTheFirstReportOnTheReply(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		in := mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		reply := func(id, runKey string) int64 {
			m := withMailbox(msg("support/t1", id, baseTime.Add(time.Second)), "support")
			m.Direction, m.RunKey = history.Outbound, runKey
			return mustAppend(t, s, m)
		}
		sent, unsent := reply("r1@acme.example", "run-1"), reply("r2@acme.example", "run-2")
		if _, err := s.MarkSent(ctx, sent); err != nil {
			t.Fatal(err)
		}
		diag := "ann@cust.example: smtp; 550 5.1.1 <ann@cust.example>: Recipient address rejected"
		if ok, err := s.MarkBounced(ctx, "support", "r1@acme.example", "5.1.1", diag); err != nil || !ok {
			t.Fatalf("MarkBounced = %v, %v; want marked", ok, err)
		}
		bouncedAt := clock.Now().Truncate(time.Microsecond)
		clock.Advance(time.Minute)
		if ok, err := s.MarkBounced(ctx, "support", "r1@acme.example", "5.2.2", "a later report"); err != nil || ok {
			t.Errorf("second report = %v, %v; want not marked", ok, err)
		}
		st, err := s.ReplyState(ctx, sent)
		if err != nil || st.Status != "bounced" || st.BounceStatus != "5.1.1" || st.BounceDiagnostic != diag ||
			!st.BouncedAt.Equal(bouncedAt) || !st.SentAt.Equal(bouncedAt) {
			t.Errorf("state = %+v, %v; want bounced 5.1.1 at %v, sent then too", st, err, bouncedAt)
		}
		// An unsent reply that bounced (the relay took it, the mark was lost) leaves the outbox.
		if ok, err := s.MarkBounced(ctx, "support", "r2@acme.example", "5.7.1", "refused"); err != nil || !ok {
			t.Fatalf("MarkBounced(unsent) = %v, %v", ok, err)
		}
		if _, ok, err := s.ClaimSend(ctx, SendClaim{Mailboxes: []string{"support"}, Holder: "w1"}); err != nil || ok {
			t.Errorf("claim after the bounce: %v, %v; want nothing to send", ok, err)
		}
		if st, err := s.ReplyState(ctx, unsent); err != nil || st.Status != "bounced" || !st.SentAt.IsZero() {
			t.Errorf("unsent bounced state = %+v, %v", st, err)
		}
		for _, c := range []struct{ name, mailbox, id string }{
			{"another mailbox", "sales", "r1@acme.example"},
			{"an unknown id", "support", "nope@acme.example"},
			{"an inbound message", "support", "q1@cust.example"},
		} {
			if ok, err := s.MarkBounced(ctx, c.mailbox, c.id, "5.1.1", "x"); err != nil || ok {
				t.Errorf("%s: MarkBounced = %v, %v; want not marked", c.name, ok, err)
			}
		}
		if _, err := s.ReplyState(ctx, in); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("state of the inbound message = %v", err)
		}
		for _, bad := range []string{"", "550", "5.1", "5.1.1 ", "x.1.1", "5.1000.1"} {
			if _, err := s.MarkBounced(ctx, "support", "r1@acme.example", bad, "x"); !errors.Is(err, ErrInvalid) {
				t.Errorf("status %q: %v, want ErrInvalid", bad, err)
			}
		}
		long := strings.Repeat("é", StoredPayloadLimit+10)
		m := withMailbox(msg("support/t1", "r3@acme.example", baseTime.Add(2*time.Second)), "support")
		m.Direction, m.RunKey = history.Outbound, "run-3"
		r3 := mustAppend(t, s, m)
		if ok, err := s.MarkBounced(ctx, "support", "r3@acme.example", "5.0.0", long); err != nil || !ok {
			t.Fatalf("long diagnostic: %v, %v", ok, err)
		}
		if st, _ := s.ReplyState(ctx, r3); len([]rune(st.BounceDiagnostic)) != StoredPayloadLimit {
			t.Errorf("long diagnostic kept %d characters, want %d", len([]rune(st.BounceDiagnostic)), StoredPayloadLimit)
		}
	}, WithClock(clock.Now))
}

func TestReceiverCheckpointsRoundTrip(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const name = "imap://support@127.0.0.1:993/INBOX"
		if c, ok, err := s.ReceiverCheckpoint(ctx, name); err != nil || ok {
			t.Fatalf("before any save: %+v, %v, %v", c, ok, err)
		}
		for _, want := range []Checkpoint{{UIDValidity: 1700000000, LastUID: 7}, {UIDValidity: 1700000000, LastUID: 9}, {UIDValidity: math.MaxUint32, LastUID: math.MaxUint32}} {
			if err := s.SaveReceiverCheckpoint(ctx, name, want); err != nil {
				t.Fatal(err)
			}
			if c, ok, err := s.ReceiverCheckpoint(ctx, name); err != nil || !ok || c != want {
				t.Errorf("after saving %+v: %+v, %v, %v", want, c, ok, err)
			}
		}
		if c, ok, err := s.ReceiverCheckpoint(ctx, name+"/Other"); err != nil || ok {
			t.Errorf("another receiver: %+v, %v, %v", c, ok, err)
		}
		for _, bad := range []string{"", "trailing ", strings.Repeat("x", MaxNameChars+1)} {
			if err := s.SaveReceiverCheckpoint(ctx, bad, Checkpoint{}); !errors.Is(err, ErrInvalid) {
				t.Errorf("save %q: %v, want ErrInvalid", bad, err)
			}
			if _, _, err := s.ReceiverCheckpoint(ctx, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("read %q: %v, want ErrInvalid", bad, err)
			}
		}
	})
}
