package providertest

import "time"

// SetTimeouts shortens the deadline of the suite's calls and the wait beyond it, for the suite's
// own tests of adapters that hang; the returned function restores them.
func SetTimeouts(call, extra time.Duration) (restore func()) {
	oldCall, oldGuard := callTimeout, guard
	callTimeout, guard = call, extra
	return func() { callTimeout, guard = oldCall, oldGuard }
}
