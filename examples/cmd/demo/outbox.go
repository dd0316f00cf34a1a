package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// sentReply is one reply the demo's sender sent: the stored reply, its RFC 5322 rendering, the
// file it was written to (-out-eml), and what MarkSent returned.
type sentReply struct {
	Reply  store.Message
	Raw    []byte
	File   string
	Marked store.Outcome
}

// outboxBatch is how many unsent replies one pass of the sender reads.
const outboxBatch = 50

// sendOutbox is the host's sender loop, once: it reads persona's unsent replies from the store's
// outbox, renders each with mail.Render, "sends" it — the demo has no SMTP server: the rendering
// is printed, and written to dir/<Message-ID>.eml when dir is set — and marks it sent. A reply
// whose file cannot be written is not marked sent (the next pass sends it again, with the same
// Message-ID).
func sendOutbox(ctx context.Context, st *store.Store, persona *runtime.Persona, dir string) ([]sentReply, error) {
	replies, err := st.UnsentReplies(ctx, persona.Name, outboxBatch)
	if err != nil {
		return nil, err
	}
	var sent []sentReply
	for _, r := range replies {
		raw, err := mail.Render(&r.Message)
		if err != nil {
			return sent, fmt.Errorf("render reply %s: %w", r.MessageID, err)
		}
		s := sentReply{Reply: r, Raw: raw}
		if dir != "" {
			s.File = filepath.Join(dir, fileName(r.MessageID)+".eml")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return sent, fmt.Errorf("-out-eml: %w", err)
			}
			if err := os.WriteFile(s.File, raw, 0o644); err != nil {
				return sent, fmt.Errorf("-out-eml: %w", err)
			}
		}
		if s.Marked, err = st.MarkSent(ctx, r.Seq); err != nil {
			return sent, fmt.Errorf("mark reply %s sent: %w", r.MessageID, err)
		}
		sent = append(sent, s)
	}
	return sent, nil
}

// fileName makes a Message-ID safe as a file name: every byte other than a letter, a digit and
// one of "@._-+" becomes "_".
func fileName(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("@._-+", r):
			return r
		}
		return '_'
	}, id)
}
