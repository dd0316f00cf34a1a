// Package console is the operator's console of a personagen store: it shows what the personas
// do — threads as conversations with their tool rounds, runs with their timelines, fires,
// the outbox, the tool calls that wait for a person's approval — and fixes it: retry a failed
// run, abandon a stuck one, run a fire again, send a reply again, approve or deny a waiting
// call. Start from New, which returns the web console as an http.Handler a host mounts
// (nothing listens unless the host serves it), or from the actions Retry, Abandon, RunFire,
// Resend and Decide, which the `personagen` command runs too (retry, abandon, fire run,
// resend, approve, deny).
//
// # Through the store alone
//
// The console needs no host code: it reads the store and acts through the store calls the
// service uses. An action marks the work in the store and a running service carries it out:
// Retry reopens the run with its lease released (store.ReopenRun) and makes a reply run's
// message pending again (store.RequeueReply), so a service's worker claims the thread and
// resumes the run, its recorded tool rounds replayed, not run again; a scheduled run is taken
// over by the next pass of a service's scheduler. RunFire does the same for a fire, recording
// one that has no run as missed first. Resend puts a reply back into the outbox with the same
// Message-ID (store.Resend). Decide records a person's decision on a call that waits for
// approval (store.Decide) and, once no call of the run waits, makes its work available, so a
// service resumes the run: an approved call runs once, a denied one never. Every action is
// recorded with who asked and why — a run event for runs, an operator action for replies, the
// decision itself for a call — and is idempotent: a repeated request changes nothing and
// returns Already. A decider of a console request is the user it signed in as (the basic-auth
// user name; "token" for a bearer token).
//
// # Security
//
// The handler serves nothing without credentials (Auth: a bearer token, or basic-auth user
// and password; AuthFromEnv reads them from the environment; comparisons in constant time):
// a request without them gets 401. Every action is a POST from the console's own pages: a
// request another origin sent (Sec-Fetch-Site, Origin) or one without the form's CSRF token (an
// HMAC of the user, keyed by the credentials, so every replica accepts it) gets 403. Every
// response carries ContentSecurityPolicy — no script at all, styles only from the console's
// stylesheet, nothing loaded from anywhere else — and email content is always escaped by
// html/template: an HTML body is shown as the text it holds (runtime.HTMLText) and its source
// as text, never rendered. In a tool call's arguments, results, decoded input and a decision's
// note every hidden character (control, bidi, zero-width: the rule of Visible, which the
// command's output follows too) is shown as its escape, marked. The pages work without JavaScript; folds are <details>; the
// charts of the overview are SVG drawn on the server.
//
// The pages, the commands and how to run the console safely are docs/console.md in the
// repository.
package console
