package runtime

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/personagen/personagen/runtime/history"
)

// snapshot holds what several resolvers of one run must read identically: each thread's
// compaction row, which ThreadSummary reads and a later ThreadHistory on the same source
// reuses. The zero value is ready to use.
type snapshot struct {
	mu      sync.Mutex
	threads []threadSnapshot // one per (source, thread) a resolver read; runs read one or two
	// turnAt is 1 + the message index at which a ThreadHistory's replay of the thread's previous
	// turn begins (0: none noted), for the request's cache plan.
	turnAt int
}

// noteTurn records that the replay of the thread's previous turn begins at message index i of
// the request being assembled (the first ThreadHistory to note one wins).
func (s *snapshot) noteTurn(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnAt == 0 {
		s.turnAt = i + 1
	}
}

// turn returns the index noteTurn recorded, or -1.
func (s *snapshot) turn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turnAt - 1
}

// threadSnapshot is what one run saw of one thread of one source.
type threadSnapshot struct {
	src    any // the source, or nil for a source whose dynamic type is not comparable
	thread string
	// summarized is set once ThreadSummary read the compaction (nil: the thread has none).
	summarized bool
	compaction *history.Compaction
	// historyFirst is set when a ThreadHistory read the thread with no ThreadSummary before it.
	historyFirst bool
}

// entry returns the snapshot of (src, thread), adding an empty one when there is none; s.mu is
// held. A source whose dynamic type cannot be compared (a struct value holding a slice, say) is
// told apart by its thread only.
func (s *snapshot) entry(src history.Source, thread string) *threadSnapshot {
	var key any = src
	if v := reflect.ValueOf(src); !v.IsValid() || !v.Comparable() {
		key = nil
	}
	for i := range s.threads {
		if t := &s.threads[i]; t.src == key && t.thread == thread {
			return t
		}
	}
	s.threads = append(s.threads, threadSnapshot{src: key, thread: thread})
	return &s.threads[len(s.threads)-1]
}

// compaction returns the thread's latest completed compaction (nil when there is none), read
// from src once per run: ThreadSummary's read. A non-nil view fixes it instead (view.Compaction,
// nothing read). It fails with ErrSummaryAfterHistory when a ThreadHistory on the same source and
// thread ran first. A read error is not kept, so a retried run reads again.
func (s *snapshot) compaction(ctx context.Context, src history.Source, thread string, view *history.View) (*history.Compaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.entry(src, thread)
	switch {
	case t.summarized:
		return t.compaction, nil
	case t.historyFirst:
		return nil, fmt.Errorf("thread summary of %q: %w", thread, ErrSummaryAfterHistory)
	}
	if view != nil {
		t.summarized, t.compaction = true, view.Compaction
		return view.Compaction, nil
	}
	c, err := src.LatestCompaction(ctx, thread)
	if err != nil {
		return nil, fmt.Errorf("thread summary of %q: latest compaction: %w", thread, err)
	}
	t.summarized, t.compaction = true, c
	return c, nil
}

// summarized returns the compaction a ThreadSummary of this run read for (src, thread), or nil
// when none ran; then it notes that a history ran without a summary, so that a ThreadSummary
// after it fails instead of repeating what the history replayed.
func (s *snapshot) summarized(src history.Source, thread string) *history.Compaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.entry(src, thread)
	if !t.summarized {
		t.historyFirst = true
	}
	return t.compaction
}
