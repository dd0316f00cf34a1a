package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// API names the wire format a Server speaks.
type API int

// The three APIs.
const (
	Anthropic API = iota
	Chat
	Responses
)

// Reply is one queued answer: an HTTP status (0 means 200), a JSON body and extra headers.
type Reply struct {
	Status int
	Body   string
	Header map[string]string
}

// Server is a strict test server for one API.
type Server struct {
	*httptest.Server
	api API
	// AllowStore makes the Responses server accept store: true (the adapter's default is
	// false, which the server otherwise requires).
	AllowStore bool

	mu       sync.Mutex
	replies  []Reply
	bodies   [][]byte
	rejected []string
	n        int
}

// New starts a server for api and closes it when t ends.
func New(t testing.TB, api API) *Server {
	s := &Server{api: api}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Queue adds replies, answered in order to the requests that pass the checks; when none is
// queued a request gets a short final text answer.
func (s *Server) Queue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, r...)
}

// Bodies returns the body of every request received, in order (refused ones included).
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Rejections returns the error message of every refused request, in order.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// path is the request path each API is served on (the SDKs append it to the base URL).
func (a API) path() string {
	switch a {
	case Anthropic:
		return "/v1/messages"
	case Chat:
		return "/v1/chat/completions"
	}
	return "/v1/responses"
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.n++
	n := s.n
	s.mu.Unlock()

	err := s.checkHTTP(r)
	if err == nil {
		switch s.api {
		case Anthropic:
			err = CheckAnthropic(body)
		case Chat:
			err = CheckChat(body)
		default:
			err = checkResponses(body, s.AllowStore)
		}
	}
	if err != nil {
		s.mu.Lock()
		s.rejected = append(s.rejected, err.Error())
		s.mu.Unlock()
		s.writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	var rep Reply
	if len(s.replies) > 0 {
		rep, s.replies = s.replies[0], s.replies[1:]
	} else {
		rep = Reply{Body: s.defaultReply(n)}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if s.api == Anthropic {
		w.Header().Set("request-id", fmt.Sprintf("req_strict_%d", n))
	} else {
		w.Header().Set("x-request-id", fmt.Sprintf("req_strict_%d", n))
	}
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

func (s *Server) checkHTTP(r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("method %s: use POST", r.Method)
	}
	if r.URL.Path != s.api.path() {
		return fmt.Errorf("path %s: this API is served at %s (the base URL is wrong)", r.URL.Path, s.api.path())
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content-type %q: send application/json", ct)
	}
	if s.api == Anthropic {
		if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" {
			return fmt.Errorf("x-api-key header is required")
		}
		if r.Header.Get("Anthropic-Version") == "" {
			return fmt.Errorf("anthropic-version header is required")
		}
		return nil
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return fmt.Errorf("Authorization: Bearer header is required")
	}
	return nil
}

// writeError answers in the API's error shape, which the SDKs decode into their error types.
func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorBody(s.api, "invalid_request_error", "", msg))
}

// ErrorBody returns the JSON error body an API sends: Anthropic's
// {"type":"error","error":{"type":…,"message":…}}, OpenAI's
// {"error":{"message":…,"type":…,"param":null,"code":…}}.
func ErrorBody(api API, typ, code, msg string) []byte {
	var v any
	if api == Anthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		var c any
		if code != "" {
			c = code
		}
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}}
	}
	b, _ := json.Marshal(v)
	return b
}

// problem is a refused request: where in the body, and which rule.
type problem struct {
	path string
	msg  string
}

func (p *problem) Error() string {
	if p.path == "" {
		return p.msg
	}
	return p.path + ": " + p.msg
}

func fail(path, format string, args ...any) error {
	return &problem{path: path, msg: fmt.Sprintf(format, args...)}
}

// decode decodes raw into v, refusing unknown fields and trailing data; path names raw in
// errors.
func decode(path string, raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(path, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fail(path, "trailing data after the JSON value")
	}
	return nil
}

// isString reports whether raw is a JSON string, and isArray whether it is an array.
func isString(raw json.RawMessage) bool { t := bytes.TrimSpace(raw); return len(t) > 0 && t[0] == '"' }
func isArray(raw json.RawMessage) bool  { t := bytes.TrimSpace(raw); return len(t) > 0 && t[0] == '[' }
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// blank reports whether s is empty or only white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

func at(path string, i int) string { return fmt.Sprintf("%s.%d", path, i) }
