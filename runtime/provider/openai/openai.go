package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
	"github.com/personagen/personagen/runtime/provider/internal/watch"
)

// cause adds what the API said to the SDK's error (whose own message names only the status) and
// marks a request refused for its length with chat.ErrContextWindow, keeping the SDK error for
// errors.As.
func cause(err error) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return err
	}
	detail := apiErr.Message
	if apiErr.Code != "" {
		detail = apiErr.Code + ": " + detail
	}
	if isContextWindow(apiErr.Code, apiErr.Message) {
		return fmt.Errorf("%w: %w (%s)", chat.ErrContextWindow, err, detail)
	}
	return fmt.Errorf("%w (%s)", err, detail)
}

// start returns the Record of one call of the adapter of name, and the per-call options that
// watch it: the Record's middleware and, for a positive cap, option.WithMaxRetryDelay(cap), so
// that the SDK's own limit on a server-directed wait is the adapter's.
func start(ctx context.Context, name, what string, maxRetryWait time.Duration, into **http.Response) (*watch.Record, []option.RequestOption) {
	maxWait := watch.MaxWait(maxRetryWait)
	rec := watch.Start(ctx, name, what, maxWait)
	opts := []option.RequestOption{option.WithResponseInto(into), option.WithMiddleware(rec.Middleware)}
	if maxWait > 0 {
		opts = append(opts, option.WithMaxRetryDelay(maxWait))
	}
	return rec, opts
}

// cacheFields returns what an OpenAI request carries of a cache plan: its Key (OpenAI's
// prompt_cache_key, which routes requests of one persona and thread to the machines that hold
// their prefix) and whether any breakpoint asks for more than 5 minutes (then a model before
// gpt-5.6 gets the extended prompt_cache_retention "24h": in-memory retention keeps a prefix 5
// to 10 minutes of inactivity, an hour at most; gpt-5.6 and later get a 12-hour breakpoint TTL
// instead). A nil plan gives neither. OpenAI caches every prompt of 1,024 tokens or more by its
// longest cached prefix without markers; gpt-5.6 and later also take explicit breakpoints
// (explicitMarks).
func cacheFields(plan *chat.CachePlan) (key string, extended bool) {
	if plan == nil {
		return "", false
	}
	for _, b := range plan.Breakpoints {
		if b.TTL > 5*time.Minute {
			extended = true
		}
	}
	return plan.Key, extended
}

// explicitMarks returns the breakpoints of req's plan an OpenAI request marks explicitly, and
// their message counts: none unless the model takes explicit breakpoints (explicit), and never
// the tail, which OpenAI's implicit breakpoint covers (with it, a request writes up to the
// latest three explicit breakpoints).
func explicitMarks(req *chat.Request, explicit bool) ([]chat.CacheBreakpoint, []int) {
	if !explicit || req.Cache == nil {
		return nil, nil
	}
	var marks []chat.CacheBreakpoint
	var ends []int
	for _, m := range req.Cache.Breakpoints {
		if m.End > 0 {
			marks, ends = append(marks, m), append(ends, m.End)
		}
	}
	if len(marks) > 3 {
		marks, ends = marks[len(marks)-3:], ends[len(ends)-3:]
	}
	return marks, ends
}

func isContextWindow(code, msg string) bool {
	return code == "context_length_exceeded" || strings.Contains(strings.ToLower(msg), "maximum context length")
}

// imageTypes are the image media types both APIs accept.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

const (
	imageWhy    = "OpenAI takes PNG, JPEG, GIF and WebP images with data"
	documentWhy = "OpenAI takes PDF documents with data"
	textOnlyWhy = "this turn carries text only"
)

// mediaType returns the media type without parameters, lower-cased.
func mediaType(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// sendable reports whether part travels as an image (image) or a PDF (document) rather than a
// note.
func sendable(part chat.Part) bool {
	if len(part.Data) == 0 {
		return false
	}
	switch part.Type {
	case chat.PartImage:
		return imageTypes[mediaType(part.MediaType)]
	case chat.PartDocument:
		return mediaType(part.MediaType) == "application/pdf"
	}
	return false
}

// note is the text that stands for a part that is not sent.
func note(part chat.Part) string {
	if part.Type == chat.PartImage {
		return turns.PartNote(part, imageWhy)
	}
	return turns.PartNote(part, documentWhy)
}

// textOnly is the text of parts on a turn that carries text only.
func textOnly(parts []chat.Part) string {
	return turns.JoinText(parts, func(p chat.Part) string { return turns.PartNote(p, textOnlyWhy) })
}

// dataURL returns part's bytes as a base64 data URL.
func dataURL(part chat.Part) string {
	mt := mediaType(part.MediaType)
	var b strings.Builder
	b.Grow(len("data:;base64,") + len(mt) + base64.StdEncoding.EncodedLen(len(part.Data)))
	b.WriteString("data:")
	b.WriteString(mt)
	b.WriteString(";base64,")
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(part.Data)
	_ = enc.Close()
	return b.String()
}

// resultText is a result's content as one text: its parts (notes for non-text ones), with
// turns.ErrorResultPrefix when the tool failed.
func resultText(r turns.Result) string {
	text := turns.JoinText(r.Parts, note)
	if r.IsError {
		return turns.ErrorText(text)
	}
	return text
}

// functionJSON is the JSON of a function tool: {"type":"function",...} fields shared by both
// APIs' tool definitions.
type functionJSON struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// toolJSON returns the function definition of t: its name, description and schema (turns.Schema).
func toolJSON(t chat.ToolDefinition, withType bool) (json.RawMessage, error) {
	schema, err := turns.Schema(t)
	if err != nil {
		return nil, err
	}
	f := functionJSON{Name: t.Name, Description: t.Description, Parameters: schema}
	if withType {
		no := false
		f.Type, f.Strict = "function", &no
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// take returns a pointer to the next free element of *a, or a new one when it is full: the
// parameter structs of one request live in a few arrays sized from its turns, so a request of
// hundreds of messages costs a handful of allocations instead of one per message.
func take[T any](a *[]T) *T {
	if len(*a) == cap(*a) {
		return new(T)
	}
	*a = (*a)[:len(*a)+1]
	return &(*a)[len(*a)-1]
}

// counts are the sizes of a request's arrays.
type counts struct{ system, user, assistant, calls, results, state int }

func countTurns(ts []turns.Turn) counts {
	var c counts
	for _, t := range ts {
		switch t.Kind {
		case turns.System:
			c.system++
		case turns.User:
			c.user++
		case turns.Assistant:
			c.assistant++
		}
		c.calls += len(t.Calls)
		c.results += len(t.Results)
		c.state += len(t.State)
	}
	return c
}
