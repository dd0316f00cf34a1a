package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestResponsibilityRunStatusTrail(t *testing.T) {
	clock := time.Date(2024, 5, 6, 8, 0, 0, 123456789, time.UTC)
	now := func() time.Time { clock = clock.Add(90 * time.Second); return clock }
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		id, err := s.StartRun(ctx, "support-agent", "daily-digest")
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != RunRunning || !r.FinishedAt.IsZero() || r.Persona != "support-agent" || r.Responsibility != "daily-digest" {
			t.Errorf("started run = %+v, want running, unfinished", r)
		}
		started := r.StartedAt
		if err := s.FinishRun(ctx, id, RunFailed, "fetch failed: "+fourByte+strings.Repeat("x", 20000)); err != nil {
			t.Fatal(err)
		}
		r, _ = s.Run(ctx, id)
		if r.Status != RunFailed || !r.FinishedAt.After(started) || r.FinishedAt.Sub(started) != 90*time.Second {
			t.Errorf("finished run = %+v, want failed 90 s after start", r)
		}
		if !strings.HasPrefix(r.Detail, "fetch failed: "+fourByte) || len([]rune(r.Detail)) != StoredPayloadLimit {
			t.Errorf("detail has %d characters, want the clipped %d", len([]rune(r.Detail)), StoredPayloadLimit)
		}
		if err := s.FinishRun(ctx, id, RunSucceeded, ""); !errors.Is(err, ErrRunFinished) {
			t.Errorf("second FinishRun error = %v, want ErrRunFinished", err)
		}
		if r2, _ := s.Run(ctx, id); r2.Status != RunFailed {
			t.Errorf("status after second finish = %s, want failed kept", r2.Status)
		}
		if err := s.FinishRun(ctx, id+1000, RunSucceeded, ""); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("FinishRun(unknown) error = %v, want ErrRunNotFound", err)
		}
		if err := s.FinishRun(ctx, id, RunRunning, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("FinishRun(running) error = %v, want ErrInvalid", err)
		}
		if _, err := s.StartRun(ctx, "", "x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("StartRun(empty persona) error = %v, want ErrInvalid", err)
		}
	}, WithClock(func() time.Time { return now() }))
}
