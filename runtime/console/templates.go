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
var pageNames = []string{"overview", "threads", "thread", "runs", "run", "fires", "outbox", "actions", "error"}

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
		"pretty":    pretty,
		"indoubt":   func(result string) bool { return strings.HasPrefix(result, agent.OutcomeUnknown) },
		"callstate": callState,
		"retryable": func(r store.Run) bool { return retryable(r) == nil },
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
// or "no outcome" (started, nothing recorded).
func callState(c store.CallTrace) string {
	switch {
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
