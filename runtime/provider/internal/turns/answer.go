package turns

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/personagen/personagen/runtime/provider"
)

// Answer keeps the body of a model call's successful HTTP answer, so that an answer that is not
// a message of its API can be reported with the start of its body: the SDKs decode the body
// themselves and drop it. The zero Answer is ready; Capture is its SDK middleware (both SDKs'
// option.Middleware is this function type), passed with option.WithMiddleware on one call.
type Answer struct {
	// Got is set when the call received a 2xx answer; Body and ContentType are then its body
	// and Content-Type header.
	Got         bool
	Body        []byte
	ContentType string
}

// Capture sends r through next and, for a 2xx answer, reads its body into a and hands the SDK
// a copy to decode. A body that cannot be read fails the SDK's own read with the same error,
// as without Capture (so the SDK never takes it for a failed attempt to retry), and leaves a
// without an answer.
func (a *Answer) Capture(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(r)
	if err != nil || resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 || resp.Body == nil {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if rerr != nil {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failedRead{rerr}))
		return resp, nil
	}
	a.Got, a.Body, a.ContentType = true, body, resp.Header.Get("Content-Type")
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// failedRead is a reader that fails with err.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, f.err }

// Failed returns the error of a call whose SDK call returned sdkErr although the API answered
// 2xx: the SDK could not decode the body (it is not JSON, JSON of another content type, or not
// an object), which is an answer that is not what of api. It returns nil when the call got no
// 2xx answer (sdkErr is then the SDK's own error, for the caller to wrap).
func (a *Answer) Failed(api, what string, sdkErr error) error {
	if !a.Got {
		return nil
	}
	reason := "the SDK could not decode it: " + sdkErr.Error()
	if mt, _, _ := mime.ParseMediaType(a.ContentType); !strings.Contains(mt, "application/json") && !strings.HasSuffix(mt, "+json") {
		reason = fmt.Sprintf("content type %q is not JSON", a.ContentType)
	}
	return Malformed(api, what, string(a.Body), reason)
}

// maxBodyShown is how many bytes of a body a malformed-answer error shows.
const maxBodyShown = 200

// Field is a field's raw JSON as a malformed-answer error shows it: "missing" when it was
// absent (raw is ""), else raw cut to its first 40 bytes and "…".
func Field(raw string) string {
	if raw == "" {
		return "missing"
	}
	if len(raw) > 40 {
		return raw[:40] + "…"
	}
	return raw
}

// Malformed returns the error for an answer of api whose body is not what (the name of the
// API's answer object): "<api>: <provider.ErrMalformedResponse>: the body is not <what>
// (<reason>); body: <its first 200 bytes, quoted>", wrapping provider.ErrMalformedResponse. An
// empty or white-space body shows as "empty body".
func Malformed(api, what, body, reason string) error {
	shown := "empty body"
	if strings.TrimSpace(body) != "" {
		cut := body
		if len(cut) > maxBodyShown {
			cut = cut[:maxBodyShown] // a rune cut in two shows as \x escapes
		}
		shown = "body " + strconv.Quote(cut)
		if len(cut) < len(body) {
			shown += fmt.Sprintf(" … (%d bytes)", len(body))
		}
	}
	return fmt.Errorf("%s: %w: the body is not %s (%s); %s", api, provider.ErrMalformedResponse, what, reason, shown)
}

// IsObject reports whether raw (a decoded answer's raw JSON) is a JSON object.
func IsObject(raw string) bool {
	t := strings.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// TypeOf shows the raw JSON of a "type" field for an error: "no type" when it was absent,
// otherwise "type <raw>" (cut at 40 bytes).
func TypeOf(raw string) string {
	if raw == "" {
		return "no type"
	}
	if len(raw) > 40 {
		raw = raw[:40] + "…"
	}
	return "type " + raw
}
