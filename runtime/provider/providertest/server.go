package providertest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/personagen/personagen/runtime/chat"
)

// Reply is one scripted answer of a Server.
//
// Status is the HTTP status (0 means 200), Body the body and Header extra headers (the server
// sends Content-Type: application/json unless Header sets it). Stall makes the server hold the
// request without answering until the client gives up (its context is done) or the server is
// closed; Drop makes it close the connection without answering. Status, Body and Header are
// ignored when either is set.
type Reply struct {
	Status int
	Body   string
	Header map[string]string
	Stall  bool
	Drop   bool
}

// Server is an HTTP server that plays a model API for an adapter under test, on any path: it
// answers each request with the next queued Reply, or with the adapter's rendering of a short
// final text ("OK.") when none is queued. With Adapter.Check set, a request that breaks the
// API's rules gets a 400 error reply (Adapter.Error) with the refusal instead, and Rejections
// lists it. With Adapter.RequestIDHeader set, every answer carries that header with the value
// "req_<n>", n counting requests from 1. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>, without a trailing slash.
	URL string

	a    Adapter
	srv  *httptest.Server
	quit chan struct{}
	once sync.Once

	mu       sync.Mutex
	replies  []Reply
	bodies   [][]byte
	rejected []string
	stalled  chan struct{} // receives once per request the server holds (Stall)
}

// NewServer starts a Server for the API a describes (Answer, Error, Check, RequestIDHeader;
// the other fields are not used). The caller closes it.
func NewServer(a Adapter) *Server {
	s := &Server{a: a, quit: make(chan struct{}), stalled: make(chan struct{}, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close releases every held request and shuts the server down, waiting for its handlers.
func (s *Server) Close() {
	s.once.Do(func() { close(s.quit) })
	s.srv.Close()
}

// Queue adds replies, answered in order to the requests that pass Adapter.Check.
func (s *Server) Queue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, r...)
}

// Bodies returns the body of every request received, in order (refused ones included), so that
// len(Bodies()) is the number of requests.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Rejections returns Adapter.Check's error text for every refused request, in order.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	n := len(s.bodies)
	s.mu.Unlock()
	if s.a.RequestIDHeader != "" {
		w.Header().Set(s.a.RequestIDHeader, fmt.Sprintf("req_%d", n))
	}
	if s.a.Check != nil {
		if err := s.a.Check(r, body); err != nil {
			s.mu.Lock()
			s.rejected = append(s.rejected, err.Error())
			s.mu.Unlock()
			s.write(w, Reply{Status: http.StatusBadRequest, Body: string(s.a.errorBody(http.StatusBadRequest, err.Error()))})
			return
		}
	}
	s.mu.Lock()
	var rep Reply
	queued := len(s.replies) > 0
	if queued {
		rep, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if !queued {
		var err error
		if rep, err = s.a.render(Answer{Text: "OK.", StopReason: chat.StopEndTurn, Usage: chat.Usage{InputTokens: 10, OutputTokens: 5}}); err != nil {
			rep = Reply{Status: http.StatusInternalServerError, Body: string(s.a.errorBody(http.StatusInternalServerError, "providertest: the adapter cannot render a text answer: "+err.Error()))}
		}
	}
	switch {
	case rep.Stall:
		select {
		case s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
	case rep.Drop:
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
	default:
		s.write(w, rep)
	}
}

func (s *Server) write(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}
