package runtime

import "sync"

// snapshot memoises values that several resolvers of one run must read identically (the
// thread's compaction row). The zero value is ready to use.
type snapshot struct {
	mu     sync.Mutex
	values map[any]any
}

// load returns the value stored under key, calling fn once per Invocation to produce it. An
// error is not memoised, so a retried run reads again.
func (s *snapshot) load(key any, fn func() (any, error)) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.values[key]; ok {
		return v, nil
	}
	v, err := fn()
	if err != nil {
		return nil, err
	}
	if s.values == nil {
		s.values = make(map[any]any)
	}
	s.values[key] = v
	return v, nil
}

// peek returns the value stored under key and whether there is one, without producing it.
func (s *snapshot) peek(key any) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok
}

// mark stores v under key unless a value is already there.
func (s *snapshot) mark(key, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[key]; ok {
		return
	}
	if s.values == nil {
		s.values = make(map[any]any)
	}
	s.values[key] = v
}
