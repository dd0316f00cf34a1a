package service

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy is the backoff of work that failed transiently (a model outage, a lost database
// connection, a relay that said 4xx): the n-th retry (n from 1) waits Initial·2^(n-1), at most
// Max, with full jitter (a random wait between half of that and all of it), or until the
// provider's retry time when that is later. After Attempts failed attempts the work fails for
// good: a reply run is recorded failed (class retries_exhausted is its reason's prefix), a send is
// recorded failed.
type RetryPolicy struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// DefaultRetry is the policy a zero RetryPolicy means: 2 s doubling to at most 5 minutes, 12
// attempts — about 36 minutes from the first failure to the last retry (2+4+…+256 s, then
// 300 s four times, jitter taking up to half of each off).
var DefaultRetry = RetryPolicy{Initial: 2 * time.Second, Max: 5 * time.Minute, Attempts: 12}

func (p RetryPolicy) orDefault() RetryPolicy {
	if p.Initial <= 0 {
		p.Initial = DefaultRetry.Initial
	}
	if p.Max <= 0 {
		p.Max = DefaultRetry.Max
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	if p.Attempts <= 0 {
		p.Attempts = DefaultRetry.Attempts
	}
	return p
}

// delay is the wait before retry n (n ≥ 1), jittered, never before notBefore - now.
func (p RetryPolicy) delay(n int, now, notBefore time.Time) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	d = d/2 + rand.N(d/2+1)
	if until := notBefore.Sub(now); until > d {
		d = until
	}
	return d
}

// exhausted reports whether work that has failed attempts times may not be tried again.
func (p RetryPolicy) exhausted(attempts int) bool { return attempts >= p.Attempts }
