package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/runtime/tokens"
	"github.com/personagen/personagen/runtime/transcript"
)

// Wires are the wire formats Render shows besides the transcript: the request body each
// adapter POSTs.
var Wires = []string{provider.Anthropic, provider.OpenAI, provider.OpenAIResponses}

// Rendering is one request as a review shows it.
type Rendering struct {
	// Wire is "" for the provider-neutral transcript, else the adapter (provider name).
	Wire string `json:"wire"`
	// Text is what a review prints: the transcript (tools first, then the messages, with a line
	// where each cache breakpoint ends its prefix, and the data of images and documents shown
	// as their size and SHA-256 prefix), or the adapter's request body as indented JSON (exact,
	// base64 included).
	Text string `json:"text"`
	// Chars is the number of characters (runes) of Text; Tokens the estimate of the request's
	// input tokens (Estimate).
	Chars  int `json:"chars"`
	Tokens int `json:"tokens"`
	// Plan describes each cache breakpoint: where it ends and the tokens up to it.
	Plan []string `json:"plan,omitempty"`
}

// MediaTokens is what Estimate counts for an image or a document part.
const MediaTokens = 1600

// Estimate returns the estimated input tokens of req — o200k_base tokens (runtime/tokens) of
// every text part, tool call (name and arguments) and tool definition (name, description,
// schema), 4 tokens of framing per message, MediaTokens per image or document — and the
// estimate of each message prefix: prefix[i] is the tokens of the tools and Messages[:i].
func Estimate(req *chat.Request) (total int, prefix []int) {
	n := 0
	for _, t := range req.Tools {
		n += tokens.Count(t.Name) + tokens.Count(t.Description) + tokens.Count(string(t.InputSchema)) + 4
	}
	prefix = make([]int, len(req.Messages)+1)
	prefix[0] = n
	for i, m := range req.Messages {
		n += 4
		if len(m.Parts) == 0 {
			n += tokens.Count(m.Text)
		}
		for _, p := range m.Parts {
			if p.Type == chat.PartText {
				n += tokens.Count(p.Text)
			} else {
				n += MediaTokens
			}
		}
		for _, c := range m.ToolCalls {
			n += tokens.Count(c.Name) + tokens.Count(string(c.Input))
		}
		prefix[i+1] = n
	}
	return n, prefix
}

// Render renders req as wire shows it: "" for the transcript, or an adapter's request body
// (Wires), captured from the real adapter by an http.RoundTripper that sends nothing. A persona
// whose settings name another provider is shown with its provider cleared, and settings that
// provider refuses are an error.
func Render(ctx context.Context, req *chat.Request, wire string) (*Rendering, error) {
	total, prefix := Estimate(req)
	r := &Rendering{Wire: wire, Tokens: total}
	marks := req.Cache.Marks(len(req.Messages))
	for i, m := range marks {
		r.Plan = append(r.Plan, planLine(i, len(marks), m, prefix[m.End], req))
	}
	if wire == "" {
		r.Text = transcriptText(req, marks, prefix)
	} else {
		body, err := WireBody(ctx, req, wire)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := json.Indent(&b, body, "", "  "); err != nil {
			return nil, fmt.Errorf("%s: the body is not JSON: %w", wire, err)
		}
		b.WriteByte('\n')
		r.Text = b.String()
	}
	r.Chars = utf8.RuneCountInString(r.Text)
	return r, nil
}

func planLine(i, n int, m chat.CacheBreakpoint, tokensUpTo int, req *chat.Request) string {
	where := fmt.Sprintf("after message %d", m.End)
	if m.End == 0 {
		where = "after the tools"
	} else if m.Scope == chat.CacheRun {
		where = "at the end (the next call of the run)"
	}
	ttl := "default lifetime"
	if m.TTL > 0 {
		ttl = "ttl " + m.TTL.String()
	}
	return fmt.Sprintf("cache breakpoint %d of %d: %s prefix, %s, %s, ~%d tokens", i+1, n, m.Scope, where, ttl, tokensUpTo)
}

// transcriptText is the transcript of req with its tools first and a line after each
// breakpoint's prefix.
func transcriptText(req *chat.Request, marks []chat.CacheBreakpoint, prefix []int) string {
	var b strings.Builder
	line := func(k int) {
		m := marks[k]
		fmt.Fprintf(&b, "=== cache breakpoint %d of %d (%s): the %s prefix above ends here, ~%d tokens ===\n\n", k+1, len(marks), ttlWord(m), m.Scope, prefix[m.End])
	}
	k := 0
	for _, t := range req.Tools {
		schema := t.InputSchema
		var c bytes.Buffer
		if json.Compact(&c, schema) == nil {
			schema = c.Bytes()
		}
		fmt.Fprintf(&b, "tool: %s\n%s\n%s\n\n", t.Name, strings.TrimSpace(t.Description), schema)
	}
	for ; k < len(marks) && marks[k].End == 0; k++ {
		line(k)
	}
	start := 0
	for start < len(req.Messages) {
		end := len(req.Messages)
		if k < len(marks) {
			end = marks[k].End
		}
		b.WriteString(elideData(transcript.Print(req.Messages[start:end])))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
		for ; k < len(marks) && marks[k].End == end; k++ {
			line(k)
		}
		start = end
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// elideData replaces the base64 data of every part line of a transcript by its size and the
// start of its SHA-256, so a review shows that an attachment is there (and when it changed)
// without pages of base64.
func elideData(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "part: ")
		if !ok || !strings.Contains(rest, `"data":`) {
			continue
		}
		var p map[string]any
		if json.Unmarshal([]byte(rest), &p) != nil {
			continue
		}
		data, _ := p["data"].(string)
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(raw)
		p["data"] = fmt.Sprintf("[%d bytes, sha256 %x…]", len(raw), sum[:6])
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(p) == nil {
			lines[i] = "part: " + strings.TrimSuffix(b.String(), "\n")
		}
	}
	return strings.Join(lines, "\n")
}

func ttlWord(m chat.CacheBreakpoint) string {
	if m.TTL > 0 {
		return "ttl " + m.TTL.String()
	}
	return "default ttl"
}

// WireBody returns the body the adapter of wire (Wires) POSTs for req, through the real
// adapter over an http.Client whose transport keeps the body and answers a canned success, so
// nothing leaves the process. The settings' provider is cleared when it names another one.
func WireBody(ctx context.Context, req *chat.Request, wire string) ([]byte, error) {
	r := *req
	if r.Model.Provider != "" && r.Model.Provider != wire {
		r.Model.Provider = ""
	}
	if r.Model.Name == "" {
		r.Model.Name = "review"
	}
	cap := &capture{wire: wire}
	client := &http.Client{Transport: cap}
	var m chat.Model
	switch wire {
	case provider.Anthropic:
		m = anthropic.New(anthropicsdk.WithHTTPClient(client), anthropicsdk.WithBaseURL("http://review.invalid"),
			anthropicsdk.WithAPIKey("review"), anthropicsdk.WithMaxRetries(0))
	case provider.OpenAI:
		m = openai.NewChat(openaisdk.WithHTTPClient(client), openaisdk.WithBaseURL("http://review.invalid/v1"),
			openaisdk.WithAPIKey("review"), openaisdk.WithMaxRetries(0))
	case provider.OpenAIResponses:
		m = openai.NewResponses(openaisdk.WithHTTPClient(client), openaisdk.WithBaseURL("http://review.invalid/v1"),
			openaisdk.WithAPIKey("review"), openaisdk.WithMaxRetries(0))
	default:
		return nil, fmt.Errorf("unknown wire format %q: use %s", wire, strings.Join(Wires, ", "))
	}
	if _, err := m.Generate(ctx, &r); err != nil && cap.body == nil {
		return nil, err
	}
	if cap.body == nil {
		return nil, fmt.Errorf("%s: the adapter sent no request", wire)
	}
	return cap.body, nil
}

// capture is the transport of WireBody: it keeps the first request's body and answers with the
// API's shortest success.
type capture struct {
	wire string
	body []byte
}

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if c.body == nil {
		c.body = body
	}
	answer := map[string]string{
		provider.Anthropic: `{"id":"msg_review","type":"message","role":"assistant","model":"review","content":[{"type":"text","text":"OK."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`,
		provider.OpenAI:    `{"id":"chatcmpl-review","object":"chat.completion","created":1,"model":"review","choices":[{"index":0,"message":{"role":"assistant","content":"OK.","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		provider.OpenAIResponses: `{"id":"resp_review","object":"response","created_at":1,"model":"review","status":"completed","output":[{"type":"message","id":"msg_review","role":"assistant","status":"completed","content":[{"type":"output_text","text":"OK.","annotations":[]}]}],` +
			`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`,
	}[c.wire]
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(answer)), Request: r}, nil
}
