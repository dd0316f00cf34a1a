package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Models picks the model of each persona's calls and bounds how hard the service drives each.
//
// The rule: a persona whose spec names a provider (model.provider: anthropic, openai,
// openai-responses; chat.ModelSettings.Provider) is served by ByProvider[that provider], and New
// refuses a persona whose provider has no entry; a persona that names none is served by Default,
// and New refuses one when Default is nil. The compaction summaries of a persona's threads go to
// the same model.
type Models struct {
	// Default serves the personas whose model settings name no provider.
	Default chat.Model
	// ByProvider maps a provider name to the adapter that serves it.
	ByProvider map[string]chat.Model
	// Limits bounds the calls per model name (chat.ModelSettings.Name), so that a burst of mail
	// does not turn into a storm of 429s. A model without an entry is unbounded. Limits are per
	// process: N replicas make up to N times as many calls.
	Limits map[string]Limit
}

// Limit bounds the calls of one model.
type Limit struct {
	// Concurrent is how many calls may be in flight at once (0: no bound).
	Concurrent int
	// PerMinute is how many calls may start per minute, spread evenly (a token bucket of
	// PerMinute tokens refilled continuously; 0: no bound).
	PerMinute int
}

// router returns the chat.Model the runner calls: each request goes to its persona's model, by
// its settings' provider, through the model's limit and the service's instruments.
func (ms Models) router(personas []*runtime.Persona, m *metrics) (chat.Model, error) {
	for _, p := range personas {
		if p == nil {
			continue
		}
		switch prov := p.Model.Provider; {
		case prov == "" && ms.Default == nil:
			return nil, fmt.Errorf("%w: persona %q names no model provider and Models.Default is nil (set Models.Default, or model.provider in its spec)", ErrConfig, p.Name)
		case prov != "" && ms.ByProvider[prov] == nil:
			return nil, fmt.Errorf("%w: persona %q uses provider %q, which Models.ByProvider does not serve", ErrConfig, p.Name, prov)
		}
	}
	for name, l := range ms.Limits {
		if l.Concurrent < 0 || l.PerMinute < 0 {
			return nil, fmt.Errorf("%w: Models.Limits[%q] is negative", ErrConfig, name)
		}
	}
	limits := &limiters{conf: ms.Limits, by: map[string]*limiter{}}
	return chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
		model, provider := ms.Default, req.Model.Provider
		if provider != "" {
			model = ms.ByProvider[provider]
		}
		if model == nil {
			return nil, fmt.Errorf("service: no model serves provider %q (Models.ByProvider, Models.Default)", provider)
		}
		release, err := limits.get(req.Model.Name).acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		start := time.Now()
		resp, err := model.Generate(ctx, req)
		m.modelCall(ctx, provider, req.Model.Name, time.Since(start), resp, err)
		return resp, err
	}), nil
}

// limiters holds one limiter per model name with a Limit.
type limiters struct {
	conf map[string]Limit
	mu   sync.Mutex
	by   map[string]*limiter
}

func (l *limiters) get(model string) *limiter {
	conf, ok := l.conf[model]
	if !ok || (conf.Concurrent == 0 && conf.PerMinute == 0) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.by[model]
	if lim == nil {
		lim = newLimiter(conf, time.Now)
		l.by[model] = lim
	}
	return lim
}

// limiter is one model's Limit: a semaphore for Concurrent, a token bucket for PerMinute.
type limiter struct {
	sem chan struct{}

	mu     sync.Mutex
	rate   float64 // tokens per second; 0 for no bucket
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(l Limit, now func() time.Time) *limiter {
	lim := &limiter{now: now}
	if l.Concurrent > 0 {
		lim.sem = make(chan struct{}, l.Concurrent)
	}
	if l.PerMinute > 0 {
		lim.rate = float64(l.PerMinute) / 60
		lim.burst = max(1, float64(l.PerMinute)/60) // at most a second's worth at once
		lim.tokens = lim.burst
		lim.last = now()
	}
	return lim
}

// errLimitWait is the cause of a wait for a model's limit that ctx ended.
var errLimitWait = errors.New("service: waiting for the model's limit")

// acquire waits for a call slot and a token; release gives the slot back. A nil limiter admits
// every call at once.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	if l.sem != nil {
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", errLimitWait, ctx.Err())
		}
	}
	release = func() {
		if l.sem != nil {
			<-l.sem
		}
	}
	for {
		wait := l.take()
		if wait == 0 {
			return release, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			release()
			return nil, fmt.Errorf("%w: %w", errLimitWait, ctx.Err())
		}
	}
}

// take takes a token when one is there (0), or returns how long until one is.
func (l *limiter) take() time.Duration {
	if l.rate == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return 0
	}
	return time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
}
