package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/store"
)

// pageNames are the console's pages: each is templates/<name>.html with the layout and the
// partials.
var pageNames = []string{"overview", "threads", "thread", "runs", "run", "fires", "outbox", "actions", "approvals", "error"}

// parseTemplates parses every page with the layout and the partials.
func parseTemplates(funcs template.FuncMap) (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// flashes are the messages an action's redirect can show (by a fixed code, so that no link can
// put words on a console page).
var flashes = map[string]string{
	"retried":   "The run is reopened: a running service picks it up.",
	"abandoned": "The run is abandoned.",
	"fired":     "The fire is marked to run: a running service's scheduler runs it.",
	"resent":    "The reply is back in the outbox: a running service's sender sends it.",
	"approved":  "The call is approved: it runs once when a running service resumes the run.",
	"denied":    "The call is denied: it does not run, and the model reads that a person denied it and the reason.",
	"already":   "Nothing to do: it already stood so.",
}

// funcs are the templates' functions.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"clip": func(s string, n int) string { return runtime.Clip(strings.Join(strings.Fields(s), " "), n) },
		"time": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"join":    func(list []string) string { return strings.Join(list, ", ") },
		"state":   func(s store.ThreadState) string { return strings.ReplaceAll(string(s), "_", " ") },
		"tokens":  tokens,
		"bytes": func(n int64) string {
			switch {
			case n >= 1<<20:
				return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
			case n >= 1<<10:
				return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
			}
			return fmt.Sprintf("%d bytes", n)
		},
		"indoubt":     func(result string) bool { return strings.HasPrefix(result, agent.OutcomeUnknown) },
		"callstate":   callState,
		"approvalfor": approvalFor,
		"decidable":   decidable,
		"visible":     segments,
		"until":       func(t time.Time) string { return until(t.Sub(c.now())) },
		"ontimeout":   onTimeout,
		"waited":      func(a store.Approval) string { return span(a.Timeout()) },
		"retryable":   func(r store.Run) bool { return retryable(r) == nil },
		"flash": func(code string) string {
			if f, ok := flashes[code]; ok {
				return f
			}
			return "Done."
		},
		"query": func(encoded string) template.URL { return template.URL(encoded) },
	}
}

// tokens formats a token count with thousands separators ("12,345").
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// pretty indents s when it is JSON, and returns it as it is otherwise.
func pretty(s string) string {
	var b bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&b, []byte(s), "", "  ") == nil {
		return b.String()
	}
	return s
}

// callState is how the run page labels a call: "ok", "failed", "outcome unknown" (reported to
// the model as such after a crash), "settled" (its outcome is recorded, its round is not yet)
// or "no outcome" (started, nothing recorded); a call that needs approval (a non-nil a) and has
// not been started reads as its approval stands: "waiting for approval", "approved" (it runs
// when the run resumes), "denied" or "expired".
func callState(c store.CallTrace, a *store.Approval) string {
	switch {
	case c.State == store.CallUnsettled && a != nil && a.StartedAt.IsZero():
		if a.Status == store.ApprovalWaiting {
			return "waiting for approval"
		}
		return string(a.Status)
	case c.State == store.CallUnsettled:
		return "no outcome"
	case strings.HasPrefix(c.Result.Content, agent.OutcomeUnknown):
		return "outcome unknown"
	case !c.Result.Succeeded:
		return "failed"
	case c.State == store.CallSettled:
		return "settled"
	}
	return "ok"
}

// onTimeout says what a's deadline does (or did), as the approvals page words it.
func onTimeout(a store.Approval) string {
	if a.OnTimeout == runtime.TimeoutApprove {
		return "the call runs as if approved"
	}
	return "the call is denied: it does not run"
}

// until words the time left before a deadline d from now: "in 2 days 5 hours", "in 3 hours 20
// minutes", "in 12 minutes", "in less than a minute"; "passed" for none left.
func until(d time.Duration) string {
	if d <= 0 {
		return "passed"
	}
	if d < time.Minute {
		return "in less than a minute"
	}
	return "in " + span(d)
}

// span words a duration to the minute, in its two largest units: "3 days", "2 days 5 hours",
// "36 minutes".
func span(d time.Duration) string {
	days, hours, minutes := int64(d/(24*time.Hour)), int64(d%(24*time.Hour)/time.Hour), int64(d%time.Hour/time.Minute)
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return strconv.FormatInt(n, 10) + " " + name + "s"
	}
	var parts []string
	switch {
	case days > 0:
		parts = append(parts, unit(days, "day"))
		if hours > 0 {
			parts = append(parts, unit(hours, "hour"))
		}
	case hours > 0:
		parts = append(parts, unit(hours, "hour"))
		if minutes > 0 {
			parts = append(parts, unit(minutes, "minute"))
		}
	default:
		parts = append(parts, unit(minutes, "minute"))
	}
	return strings.Join(parts, " ")
}
