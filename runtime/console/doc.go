// Package console is the operator's console of a personagen store: see and fix what the
// personas do. Start from New, which returns an http.Handler a host mounts (nothing listens
// unless it serves it), or from the actions (Retry, Abandon, RunFire, Resend) that the
// `personagen` command runs too.
package console
