package runtime

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/personagen/personagen/runtime/history"
)

// snapshot memoises what several resolvers of one run must read identically: the thread's
// compaction row, which ThreadSummary reads and a later ThreadHistory on the same source
// reuses. The zero value is ready to use.
type snapshot struct {
	mu     sync.Mutex
	values map[any]any
}

// compactionKey names one thread's compaction row of one source. A source whose dynamic type
// cannot be a map key (a struct value holding a slice, say) is keyed by its thread only.
type compactionKey struct {
	src    any
	thread string
}

// historyRanKey marks that a ThreadHistory read a thread with no ThreadSummary before it.
type historyRanKey struct{ compactionKey }

func newCompactionKey(src history.Source, thread string) compactionKey {
	if v := reflect.ValueOf(src); !v.IsValid() || !v.Comparable() {
		return compactionKey{thread: thread}
	}
	return compactionKey{src: src, thread: thread}
}

// compaction returns the thread's latest completed compaction (nil when there is none), read
// from src once per run: ThreadSummary's read. It fails with ErrSummaryAfterHistory when a
// ThreadHistory on the same source and thread ran first. A read error is not memoised, so a
// retried run reads again.
func (s *snapshot) compaction(ctx context.Context, src history.Source, thread string) (*history.Compaction, error) {
	key := newCompactionKey(src, thread)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.values[key]; ok {
		c, _ := v.(*history.Compaction)
		return c, nil
	}
	if _, ranFirst := s.values[historyRanKey{key}]; ranFirst {
		return nil, fmt.Errorf("thread summary of %q: %w", thread, ErrSummaryAfterHistory)
	}
	c, err := src.LatestCompaction(ctx, thread)
	if err != nil {
		return nil, fmt.Errorf("thread summary of %q: latest compaction: %w", thread, err)
	}
	s.put(key, c)
	return c, nil
}

// summarized returns the compaction a ThreadSummary of this run read for (src, thread), or nil
// when none ran; then it notes that a history ran without a summary, so that a ThreadSummary
// after it fails instead of repeating what the history replayed.
func (s *snapshot) summarized(src history.Source, thread string) *history.Compaction {
	key := newCompactionKey(src, thread)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.values[key]; ok {
		c, _ := v.(*history.Compaction)
		return c
	}
	if _, ok := s.values[historyRanKey{key}]; !ok {
		s.put(historyRanKey{key}, true)
	}
	return nil
}

// put stores v under key; s.mu is held.
func (s *snapshot) put(key, v any) {
	if s.values == nil {
		s.values = make(map[any]any)
	}
	s.values[key] = v
}
