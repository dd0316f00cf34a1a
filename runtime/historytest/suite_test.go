package historytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// recorder is a tb that keeps what a rule reports; Fatalf and Skipf end the rule as they do on
// a *testing.T.
type recorder struct {
	errors  []string
	skipped bool
}

type stop struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(stop{})
}
func (r *recorder) Skipf(string, ...any) { r.skipped = true; panic(stop{}) }

// failures runs every rule against src and returns the names of those that reported a problem.
func failures(src history.Source, w Writer) []string {
	var failed []string
	for _, c := range cases {
		r := &recorder{}
		func() {
			defer func() {
				if v := recover(); v != nil {
					if _, ok := v.(stop); !ok {
						panic(v)
					}
				}
			}()
			c.run(&fixture{t: r, ctx: context.Background(), src: src, w: w, name: c.name, seqs: map[string]int64{}})
		}()
		if len(r.errors) > 0 {
			failed = append(failed, c.name)
		}
	}
	return failed
}

// broken wraps a memory source and breaks one rule in what History returns.
type broken struct {
	*memory.Source
	history func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error)
}

func (b broken) History(ctx context.Context, q history.Query) (*history.Window, error) {
	return b.history(b.Source, ctx, q)
}

// Each broken source fails the rules it breaks, so the suite cannot pass a wrong source.
func TestSuiteCatchesBrokenSources(t *testing.T) {
	cases := []struct {
		name    string
		history func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error)
		want    []string // rules that must fail, among possibly others
	}{
		{"orders by Date", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			q.Limit = history.NoLimit
			w, err := s.History(ctx, q)
			if err != nil {
				return nil, err
			}
			slices.SortStableFunc(w.Messages, func(a, b history.Message) int { return a.Date.Compare(b.Date) })
			return w, nil
		}, []string{"order_of_record_not_date"}},
		{"Limit 0 reads everything", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			if q.Limit == 0 {
				q.Limit = history.NoLimit
			}
			return s.History(ctx, q)
		}, []string{"limit_zero_is_the_default"}},
		{"no Omitted count", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			w, err := s.History(ctx, q)
			if w != nil {
				w.Omitted = 0
			}
			return w, err
		}, []string{"limit_keeps_the_most_recent", "exclude_message", "windows_around_a_boundary"}},
		{"no query check", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			if q.Check() != nil {
				return &history.Window{}, nil
			}
			return s.History(ctx, q)
		}, []string{"bad_queries_are_refused"}},
		{"tool uses always", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			q.ToolUses = true
			return s.History(ctx, q)
		}, []string{"tool_uses_only_when_asked"}},
		{"shared window", sharedWindow(), []string{"caller_owns_the_window"}},
		{"no thread id, no threading headers", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			w, err := s.History(ctx, q)
			if err != nil {
				return nil, err
			}
			for i := range w.Messages {
				w.Messages[i].ThreadID, w.Messages[i].InReplyTo, w.Messages[i].References = "", "", nil
			}
			return w, nil
		}, []string{"fields_round_trip", "threading_headers_round_trip"}},
		{"dates in local time", func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
			w, err := s.History(ctx, q)
			if err != nil {
				return nil, err
			}
			for i := range w.Messages {
				w.Messages[i].Date = w.Messages[i].Date.In(fixedZone)
			}
			return w, err
		}, []string{"fields_round_trip"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := memory.New()
			failed := failures(broken{Source: src, history: c.history}, src)
			for _, rule := range c.want {
				if !slices.Contains(failed, rule) {
					t.Errorf("rule %s passed a source that breaks it; failed rules: %s", rule, strings.Join(failed, ", "))
				}
			}
		})
	}
	// And a correct source fails none.
	src := memory.New()
	if failed := failures(src, src); len(failed) > 0 {
		t.Errorf("memory source fails %v", failed)
	}
}

// sharedWindow returns a History that hands every caller of one query the same Window.
func sharedWindow() func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
	seen := map[history.Query]*history.Window{}
	return func(s *memory.Source, ctx context.Context, q history.Query) (*history.Window, error) {
		if w, ok := seen[q]; ok {
			return w, nil
		}
		w, err := s.History(ctx, q)
		if err == nil {
			seen[q] = w
		}
		return w, err
	}
}

var fixedZone = time.FixedZone("CET", 3600)
