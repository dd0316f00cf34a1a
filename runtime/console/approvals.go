package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// Decide records the decision status (store.ApprovalApproved or store.ApprovalDenied) of a.By
// on the call callID of the run runKey, with a.Reason as its note, through the store alone
// (store.Decide): an approved call runs once when the run resumes, a denied one never runs and
// the model reads the note (so write a denial's note for the model; it may reach the
// customer). When no call of the run waits any more, the run's work is made available, so a
// running service resumes the run on any replica; nothing runs in this call. It returns the
// approval as stored and Done; Already when the call has this decision already (the first
// decider, time and note are kept).
//
// Errors: ErrNotFound (wrapped) for a run the store does not hold or a call of it that never
// needed approval; ErrRefused (wrapped) for a call decided the other way or expired (the
// message names the decision that stands: who and when), or a run that ended before the call
// was decided; store.ErrInvalid (wrapped) for an empty run key, call id or a.By, a status other
// than approved and denied, a note over store.MaxApprovalNoteBytes or not UTF-8; the store's
// (wrapped), including a decision recorded whose run could not be woken (a service resumes
// the run within its poll interval; deciding again returns Already).
func Decide(ctx context.Context, st *store.Store, runKey, callID string, status store.ApprovalStatus, a Actor) (store.Approval, Outcome, error) {
	ap, out, err := st.Decide(ctx, runKey, callID, status, a.By, a.Reason)
	switch {
	case errors.Is(err, store.ErrApprovalNotFound), errors.Is(err, store.ErrRunNotFound):
		return ap, "", fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrRunFinished):
		return ap, "", fmt.Errorf("%w: %w", ErrRefused, err)
	case err != nil:
		return ap, "", err
	case out == store.AlreadyStored:
		return ap, Already, nil
	}
	return ap, Done, nil
}

// approvalStatuses are the choices of the approvals page's status filter ("all" for every
// status).
var approvalStatuses = []string{string(store.ApprovalWaiting), string(store.ApprovalApproved), string(store.ApprovalDenied),
	string(store.ApprovalExpired), "all"}

// approvalsLimit is how many decided approvals the approvals page lists at most: the most
// recently requested. The waiting ones are listed all, so that the longest waiting, whose
// deadline comes first, is never left off.
const approvalsLimit = 100

// approvalsData is the approvals page.
type approvalsData struct {
	Status    string
	Persona   string
	Run       string
	Statuses  []string
	Approvals []store.Approval
	// Full is set when a list of decided approvals holds approvalsLimit: older ones are not
	// shown.
	Full  bool
	Limit int
}

func (c *Console) approvals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := approvalsData{Status: q.Get("status"), Persona: q.Get("persona"), Run: q.Get("run"), Statuses: approvalStatuses, Limit: approvalsLimit}
	if d.Status == "" {
		d.Status = string(store.ApprovalWaiting)
	}
	aq := store.ApprovalQuery{Status: store.ApprovalStatus(d.Status), Persona: d.Persona, RunKey: d.Run, Limit: approvalsLimit}
	switch d.Status {
	case "all":
		aq.Status = ""
	case string(store.ApprovalWaiting):
		aq.Limit = 0
	case string(store.ApprovalApproved), string(store.ApprovalDenied), string(store.ApprovalExpired):
	default:
		c.fail(w, r, fmt.Errorf("%w: status=%q (want waiting, approved, denied, expired or all)", errBadRequest, d.Status))
		return
	}
	list, err := c.st.Approvals(r.Context(), aq)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Status != string(store.ApprovalWaiting) {
		// Decided calls the latest first; waiting ones as Approvals returns them, the longest
		// waiting first.
		slices.Reverse(list)
	}
	d.Approvals, d.Full = list, aq.Limit > 0 && len(list) == aq.Limit
	c.render(w, r, http.StatusOK, "approvals", d)
}

// decider is the Actor of a console decision: who the request authenticated as (the basic-auth
// user name; "token" for a bearer token), as the decider, and the form's note.
func decider(r *http.Request) Actor {
	by := strings.TrimRight(runtime.Clip(strings.TrimSpace(who(r.Context())), store.MaxNameChars), " ")
	return Actor{By: by, Reason: strings.TrimSpace(r.PostFormValue("note"))}
}

func (c *Console) postApprove(w http.ResponseWriter, r *http.Request) {
	c.postDecide(w, r, store.ApprovalApproved, "approved")
}

func (c *Console) postDeny(w http.ResponseWriter, r *http.Request) {
	c.postDecide(w, r, store.ApprovalDenied, "denied")
}

// postDecide decides the form's call (key, call) with its note and goes back to the page it
// came from: the run's page (back=run) or the approvals page.
func (c *Console) postDecide(w http.ResponseWriter, r *http.Request, status store.ApprovalStatus, what string) {
	key, call := r.PostFormValue("key"), r.PostFormValue("call")
	if key == "" || call == "" {
		c.fail(w, r, fmt.Errorf("%w: a decision names the run (key) and the call (call)", errBadRequest))
		return
	}
	a := decider(r)
	_, out, err := Decide(r.Context(), c.st, key, call, status, a)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if r.PostFormValue("back") == "run" {
		c.done(w, r, a, "/run", url.Values{"key": {key}}, what, out)
		return
	}
	c.done(w, r, a, "/approvals", url.Values{}, what, out)
}

// approvalFor returns the approval of call position of turn t (nil when the call needed none).
func approvalFor(t store.TurnTrace, position int) *store.Approval {
	for i := range t.Approvals {
		if t.Approvals[i].Position == position {
			return &t.Approvals[i]
		}
	}
	return nil
}

// decidable reports whether a can still be decided: it waits, and its run is running or
// waiting.
func decidable(a store.Approval) bool {
	return a.Status == store.ApprovalWaiting && (a.RunStatus == store.RunRunning || a.RunStatus == store.RunWaiting)
}
