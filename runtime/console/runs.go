package console

import (
	"fmt"

	"github.com/personagen/personagen/runtime/store"
)

// retryable returns nil when Retry applies to r as it stands, else the reason it does not
// (wrapping ErrRefused): a run that failed or was abandoned is retried, and so is a fire that
// was skipped; a reply run that was skipped answered a message not to be answered, a running
// run is being worked on, and a run that succeeded is done (start another).
func retryable(r store.Run) error {
	switch {
	case r.Status == store.RunFailed, r.Status == store.RunAbandoned:
		return nil
	case r.Status == store.RunSkipped && r.Kind == store.RunScheduled:
		return nil
	case r.Status == store.RunSkipped:
		return fmt.Errorf("%w: run %q was skipped (%s): its message is not to be answered", ErrRefused, r.Key, r.Reason)
	case r.Status == store.RunRunning:
		return fmt.Errorf("%w: run %q is running (a worker works on it, or will resume it)", ErrRefused, r.Key)
	}
	return fmt.Errorf("%w: run %q succeeded; a succeeded run is not run again", ErrRefused, r.Key)
}
