package service

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// The metric names (OpenTelemetry; the Prometheus exporter turns dots into underscores and
// adds unit and _total suffixes, e.g. personagen_runs_total). Every one is documented in the
// package doc.
const (
	metricPending   = "personagen.work.pending"
	metricRuns      = "personagen.runs"
	metricDelivered = "personagen.messages.delivered"
	metricTokens    = "personagen.model.tokens"
	metricDuration  = "gen_ai.client.operation.duration"
	metricTools     = "personagen.tool.calls"
	metricSent      = "personagen.outbox.sends"
	metricClaim     = "personagen.claim.duration"
)

// The bucket boundaries of the two histograms, in seconds (docs/service.md lists them).
var (
	// modelCallBuckets are the OpenTelemetry GenAI semantic conventions' advisory boundaries
	// for gen_ai.client.operation.duration: 10 ms doubling to 81.92 s.
	modelCallBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// claimBuckets span a claim's database round trips: 0.5 ms (an idle SQLite) to 10 s (a
	// claim waiting out lock races on a loaded server).
	claimBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// pendingEvery bounds how often the pending-work gauges query the store.
const pendingEvery = 5 * time.Second

// metrics holds the service's instruments.
type metrics struct {
	runs       metric.Int64Counter
	deliveries metric.Int64Counter
	tokens     metric.Int64Counter
	duration   metric.Float64Histogram
	tools      metric.Int64Counter
	sends      metric.Int64Counter
	claim      metric.Float64Histogram

	mu      sync.Mutex
	pending map[string]int64 // by kind, read from the store at most every pendingEvery
	read    time.Time
}

// newMetrics makes the instruments on mp, or on a provider of the service's own exported to
// Prometheus, and the service's HTTP handler (health, readiness, the scrape endpoint).
func newMetrics(mp metric.MeterProvider, s *Service) (*metrics, http.Handler, error) {
	mux := http.NewServeMux()
	if mp == nil {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, nil, err
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	meter := mp.Meter("github.com/personagen/personagen/runtime/service")
	m := &metrics{pending: map[string]int64{}}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.runs, err = meter.Int64Counter(metricRuns, metric.WithDescription("Run attempts that ended, by persona, kind, outcome (the run's status, or stopped for a transient stop) and failure class."))
	add(err)
	m.deliveries, err = meter.Int64Counter(metricDelivered, metric.WithDescription("Messages delivered by the receivers, by persona and outcome (pending, not_answered, duplicate)."))
	add(err)
	m.tokens, err = meter.Int64Counter(metricTokens, metric.WithDescription("Model tokens, by provider, model and type (input, output, cache_read, cache_write; cache_read and cache_write are parts of input)."), metric.WithUnit("{token}"))
	add(err)
	m.duration, err = meter.Float64Histogram(metricDuration, metric.WithDescription("Duration of model calls, by provider, model and error type."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(modelCallBuckets...))
	add(err)
	m.tools, err = meter.Int64Counter(metricTools, metric.WithDescription("Tool calls run, by persona, tool and outcome (ok, error)."))
	add(err)
	m.sends, err = meter.Int64Counter(metricSent, metric.WithDescription("Reply sends, by persona and outcome (sent, transient, permanent)."))
	add(err)
	m.claim, err = meter.Float64Histogram(metricClaim, metric.WithDescription("Duration of work claims, by kind (reply, send) and outcome."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(claimBuckets...))
	add(err)
	pending, err := meter.Int64ObservableGauge(metricPending, metric.WithDescription("Pending work in the store, by kind: reply (threads waiting for an answer), send (replies waiting to be sent)."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if _, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for kind, n := range m.pendingCounts(ctx, s.st) {
			o.ObserveInt64(pending, n, metric.WithAttributes(attribute.String("kind", kind)))
		}
		return nil
	}, pending); err != nil {
		return nil, nil, err
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		status, body := http.StatusOK, map[string]any{"ready": true}
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			status, body = http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "stopping"}
		} else if err := s.st.Ready(ctx); err != nil {
			status, body = http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": store.RedactDSN(err.Error())}
		} else if err := s.checkDirs(); err != nil {
			status, body = http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": err.Error()}
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	})
	return m, mux, nil
}

// pendingCounts returns the pending work by kind, from the store at most every pendingEvery.
func (m *metrics) pendingCounts(ctx context.Context, st *store.Store) map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.read) < pendingEvery {
		return m.pending
	}
	if n, err := st.CountPending(ctx); err == nil {
		m.pending = map[string]int64{"reply": n.Replies, "send": n.Sends}
		m.read = time.Now()
	}
	return m.pending
}

func (m *metrics) run(ctx context.Context, persona string, kind store.RunKind, outcome, class string) {
	m.runs.Add(ctx, 1, metric.WithAttributes(attribute.String("persona", persona), attribute.String("kind", string(kind)),
		attribute.String("outcome", outcome), attribute.String("failure_class", class)))
}

func (m *metrics) delivered(ctx context.Context, persona string, d mail.Delivered) {
	outcome := "pending"
	switch {
	case d.Duplicate:
		outcome = "duplicate"
	case d.NoReply.Skip():
		outcome = "not_answered"
	}
	m.deliveries.Add(ctx, 1, metric.WithAttributes(attribute.String("persona", persona), attribute.String("outcome", outcome)))
}

func (m *metrics) modelCall(ctx context.Context, provider, model string, d time.Duration, resp *chat.Response, err error) {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.provider.name", provider), attribute.String("gen_ai.request.model", model)}
	if err != nil {
		kind := "error"
		var ce *chat.CallError
		switch {
		case errors.As(err, &ce) && ce.Transient:
			kind = "transient"
		case errors.As(err, &ce):
			kind = "permanent"
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			kind = "cancelled"
		}
		attrs = append(attrs, attribute.String("error.type", kind))
	}
	m.duration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	if resp == nil {
		return
	}
	u := resp.Usage
	for _, t := range []struct {
		kind string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}} {
		if t.n > 0 {
			m.tokens.Add(ctx, t.n, metric.WithAttributes(append(attrs[:2:2], attribute.String("type", t.kind))...))
		}
	}
}

func (m *metrics) sent(ctx context.Context, persona, failure string) {
	outcome := "sent"
	if failure != "" {
		outcome = failure
	}
	m.sends.Add(ctx, 1, metric.WithAttributes(attribute.String("persona", persona), attribute.String("outcome", outcome)))
}

func (m *metrics) claimed(ctx context.Context, kind string, d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.claim.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("kind", kind), attribute.String("outcome", outcome)))
}

// instrumentTools returns a copy of p whose tools count their calls.
func (m *metrics) instrumentTools(p *runtime.Persona) *runtime.Persona {
	cp := *p
	cp.Tools = make([]runtime.Tool, len(p.Tools))
	for i, t := range p.Tools {
		if t == nil {
			cp.Tools[i] = nil
			continue
		}
		cp.Tools[i] = countedTool{Tool: t, m: m, persona: p.Name}
	}
	return &cp
}

// countedTool counts the calls of a tool.
type countedTool struct {
	runtime.Tool
	m       *metrics
	persona string
}

// Unwrap returns the counted tool, so runtime.DecodeInput sees through the count.
func (t countedTool) Unwrap() runtime.Tool { return t.Tool }

func (t countedTool) Call(ctx context.Context, inv *runtime.Invocation, input json.RawMessage) (string, error) {
	out, err := t.Tool.Call(ctx, inv, input)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	t.m.tools.Add(ctx, 1, metric.WithAttributes(attribute.String("persona", t.persona), attribute.String("tool", t.Name()),
		attribute.String("outcome", outcome)))
	return out, err
}
