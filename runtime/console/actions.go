package console

import (
	"context"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/store"
)

// Actor is who asks for an action and why, as the store records it.
type Actor struct {
	// By names who acts: "console:ada", "cli:root@host" (required, at most 191 characters).
	By string
	// Reason says why ("" for none, though the CLI asks for one).
	Reason string
}

// Outcome says what an action did.
type Outcome string

// The outcomes of an action.
const (
	// Done: the action changed the store, and is recorded.
	Done Outcome = "done"
	// Already: the store already stood as the action would leave it (a repeated request);
	// nothing was changed or recorded.
	Already Outcome = "already"
)

// ErrRefused is returned (wrapped, with the reason) when an action does not apply to what it
// names as it stands: a run that succeeded is not retried, a run a worker holds is not
// abandoned, a message not to be answered is not answered.
var ErrRefused = errors.New("console: refused")

// ErrNotFound is returned (wrapped) when an action names a run, reply or responsibility the
// store does not hold.
var ErrNotFound = errors.New("console: not found")

// notFound maps the store's not-found errors to ErrNotFound, keeping the store's text.
func notFound(err error) error {
	if errors.Is(err, store.ErrRunNotFound) || errors.Is(err, store.ErrMessageNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// Resend puts the reply seq back into the outbox (store.Resend): a service's sender sends it
// again, with the same Message-ID. Done, recorded with a's By and Reason; Already when it is
// waiting to be sent. Errors: ErrNotFound (wrapped) when seq is not a reply in the outbox; the
// store's (wrapped).
func Resend(ctx context.Context, st *store.Store, seq int64, a Actor) (Outcome, error) {
	out, err := st.Resend(ctx, seq, a.By, a.Reason)
	if err != nil {
		return "", notFound(err)
	}
	if out == store.AlreadyStored {
		return Already, nil
	}
	return Done, nil
}
