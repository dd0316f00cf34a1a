// Package fakeapi serves fake model APIs for tests, demos and benchmarks: HTTP servers that
// speak the Anthropic Messages, OpenAI Chat Completions and OpenAI Responses wire formats to the
// real SDK clients (and so to the adapters of runtime/provider), refuse every request that
// breaks the API's rules with the API's own error (the strict rules of the adapters' tests),
// answer with scripted answers, and bill every answer as the provider's prompt cache would: a
// Server keeps the API's prompt cache (prefix match up to a breakpoint, the minimum cacheable
// length of the model family, lifetimes, at most four breakpoints, OpenAI's 1,024-token minimum
// in 128-token increments and its prompt_cache_key routing) and reports cache reads and writes
// in the answer's usage, so a test reads what a real bill would show. The rules are a table in
// runtime/provider/internal/strict/cache.go, each citing the provider's documentation.
//
// Start from New, a Server for one API whose URL an SDK client takes; Queue scripts its answers.
//
// Tokens are counted with runtime/tokens (o200k_base), a block's content plus a small framing.
//
//	srv := fakeapi.New(fakeapi.Anthropic)
//	defer srv.Close()
//	model := anthropic.New(option.WithBaseURL(srv.URL), option.WithAPIKey("test"))
//	srv.Queue(fakeapi.Answer{Text: "Hello."})
//	resp, _ := model.Generate(ctx, req) // resp.Usage.CacheReadTokens as the cache saw it
package fakeapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/providertest"
	"github.com/personagen/personagen/runtime/tokens"
)

// API names a wire format.
type API int

// The APIs a Server speaks.
const (
	Anthropic       API = API(strict.Anthropic)
	OpenAI          API = API(strict.Chat)
	OpenAIResponses API = API(strict.Responses)
)

// Answer is one scripted answer: the assistant's Text and tool Calls (a call's arguments as a
// JSON text). The server fills in the stop reason (tool_use with calls, end_turn without) and
// the usage: the input as the cache bills it, the output as the tokens of Text and Calls.
type Answer struct {
	Text  string
	Calls []providertest.Call
}

// Call is one request the server answered: its body, its usage and its cost in uncached-input
// units at the provider's multipliers (Multipliers).
type Call struct {
	Body  []byte
	Usage chat.Usage
	// Write1h is the part of Usage.CacheWriteTokens written for an hour (Anthropic).
	Write1h int64
	Cost    float64
}

// Multipliers are the prices of cached input relative to uncached input: Read per token read
// from the cache, Write5m and Write1h per token written to it for 5 minutes or an hour
// (Anthropic: 0.1, 1.25, 2; OpenAI: 0.1, 1, 1).
type Multipliers = strict.Multipliers

// Prices returns the multipliers a Server of api bills with.
func Prices(api API) Multipliers { return strict.Prices(strict.API(api)) }

// Server is a fake API. Its clock starts at a fixed instant and moves only by Advance, so cache
// lifetimes are tested without waiting. It is safe for concurrent use.
type Server struct {
	// URL is the base URL to give the SDK client (option.WithBaseURL).
	URL string
	// Lenient answers requests that break the API's rules too (billing them by the cache
	// rules all the same), for measuring a peer's requests that the real API might refuse. Set
	// it before the first request.
	Lenient bool

	api    API
	srv    *httptest.Server
	cache  *strict.Cache
	adapt  providertest.Adapter
	mu     sync.Mutex
	now    time.Time
	queue  []Answer
	calls  []Call
	errors []string
}

// New starts a Server for api; Close stops it.
func New(api API) *Server {
	s := &Server{api: api, adapt: strict.Adapter(strict.API(api)), now: time.Date(2025, 3, 6, 12, 0, 0, 0, time.UTC)}
	s.cache = &strict.Cache{API: strict.API(api), Now: s.clock}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Queue adds answers, given in order to the requests that pass the API's rules; when none is
// queued the server answers "OK.".
func (s *Server) Queue(a ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, a...)
}

// Advance moves the server's clock by d: cache entries older than their lifetime expire.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// Calls returns every answered request, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Rejections returns the rule each refused request broke, in order.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

func (s *Server) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := s.adapt.Check(r, body); err != nil && !s.Lenient {
		s.mu.Lock()
		s.errors = append(s.errors, err.Error())
		s.mu.Unlock()
		s.write(w, providertest.Reply{Status: http.StatusBadRequest, Body: string(s.adapt.Error(http.StatusBadRequest, err.Error()))})
		return
	}
	bill, err := s.cache.Bill(body)
	if err != nil {
		s.write(w, providertest.Reply{Status: http.StatusBadRequest, Body: string(s.adapt.Error(http.StatusBadRequest, err.Error()))})
		return
	}
	s.mu.Lock()
	ans := Answer{Text: "OK."}
	if len(s.queue) > 0 {
		ans, s.queue = s.queue[0], s.queue[1:]
	}
	s.calls = append(s.calls, Call{Body: body, Usage: bill.Usage, Write1h: bill.Write1h, Cost: bill.Cost})
	n := len(s.calls)
	s.mu.Unlock()
	out := tokens.Count(ans.Text)
	for _, c := range ans.Calls {
		out += tokens.Count(c.Name) + tokens.Count(c.Arguments) + strict.BlockTokens
	}
	u := bill.Usage
	u.OutputTokens = int64(out)
	stop := chat.StopEndTurn
	if len(ans.Calls) > 0 {
		stop = chat.StopToolUse
	}
	rep, err := s.adapt.Answer(providertest.Answer{Text: ans.Text, Calls: ans.Calls, StopReason: stop, Usage: u})
	if err != nil {
		rep = providertest.Reply{Status: http.StatusInternalServerError, Body: string(s.adapt.Error(500, err.Error()))}
	}
	if s.adapt.RequestIDHeader != "" {
		w.Header().Set(s.adapt.RequestIDHeader, fmt.Sprintf("req_%d", n))
	}
	s.write(w, rep)
}

func (s *Server) write(w http.ResponseWriter, rep providertest.Reply) {
	w.Header().Set("Content-Type", "application/json")
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}
