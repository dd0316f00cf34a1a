package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/provider/providertest"
)

// API names the wire format a Server speaks.
type API int

// The three APIs.
const (
	Anthropic API = iota
	Chat
	Responses
)

// Reply is one queued answer (see providertest.Reply).
type Reply = providertest.Reply

// Server is a strict test server for one API: a providertest.Server whose Adapter is
// Adapter(api), so it refuses every request that breaks the API's rules with a 400 in the API's
// error shape, answers with the API's text answer ("OK.") when no reply is queued, and names
// every request "req_<n>" in the API's request-id header.
type Server = providertest.Server

// New starts a server for api and closes it when t ends.
func New(t testing.TB, api API) *Server {
	s := providertest.NewServer(Adapter(api))
	t.Cleanup(s.Close)
	return s
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

// checkHTTP checks the method, path, content type and credentials of a request to api.
func checkHTTP(api API, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("method %s: use POST", r.Method)
	}
	if r.URL.Path != api.path() {
		return fmt.Errorf("path %s: this API is served at %s (the base URL is wrong)", r.URL.Path, api.path())
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content-type %q: send application/json", ct)
	}
	if api == Anthropic {
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
