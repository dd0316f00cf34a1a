package strict

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime/provider"
)

// The Chat Completions request, as far as the adapter uses it (plus the Extra keys tests pass).
type chatRequest struct {
	Model                *string           `json:"model"`
	Messages             []json.RawMessage `json:"messages"`
	MaxCompletionTokens  *int64            `json:"max_completion_tokens"`
	Temperature          *float64          `json:"temperature"`
	TopP                 *float64          `json:"top_p"`
	Stop                 json.RawMessage   `json:"stop"`
	Tools                []json.RawMessage `json:"tools"`
	Seed                 *int64            `json:"seed"`
	ReasoningEffort      string            `json:"reasoning_effort"`
	User                 string            `json:"user"`
	PromptCacheKey       *string           `json:"prompt_cache_key"`
	PromptCacheRetention string            `json:"prompt_cache_retention"`
	PromptCacheOptions   *oaCacheOptions   `json:"prompt_cache_options"`
}

// oaCacheOptions is prompt_cache_options; oaBreakpoint a content part's prompt_cache_breakpoint.
type oaCacheOptions struct {
	Mode                 string `json:"mode"`
	TTL                  string `json:"ttl"`
	Prewarm              *bool  `json:"prewarm"`
	ComparisonResponseID string `json:"comparison_response_id"`
}

type oaBreakpoint struct {
	Mode string `json:"mode"`
	TTL  string `json:"ttl"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	Refusal    *string         `json:"refusal"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// The OpenAI rules' messages (Chat Completions and Responses).
const (
	OaNoModel         = "you must provide a model parameter"
	OaNoMessages      = "messages: at least one message is required"
	OaDeprecated      = "max_tokens is deprecated for this model; use max_completion_tokens"
	OaStopCount       = "stop: at most 4 stop sequences"
	OaBlankText       = "text content must contain non-whitespace text"
	OaToolAfterCalls  = "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
	OaMissingToolMsg  = "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
	OaAssistantEmpty  = "an assistant message needs content or tool_calls"
	OaSameRole        = "consecutive messages with the same role; merge them into one"
	OaFirstUser       = "the first message that is not a system message must be a user message"
	OaImageURL        = "image_url must be a data URL of image/png, image/jpeg, image/gif or image/webp with valid base64"
	OaFileData        = "file_data must be a data URL of application/pdf with valid base64, with a filename"
	OaPartRole        = "this content part is not allowed in this role"
	OaToolName        = "tools: function name must match ^[a-zA-Z0-9_-]{1,64}$"
	OaToolSchema      = `tools: parameters must be a JSON object with "type": "object"`
	OaDuplicateTool   = "tools: function names must be unique"
	OaNoOutput        = "No tool output found for function call"
	OaOrphanOutput    = "No tool call found for function call output"
	OaStoreFalse      = "store: this server requires store: false (the adapter's default)"
	OaInclude         = `include: with store: false, include must contain "reasoning.encrypted_content"`
	OaReasoningID     = "Items are not persisted when `store` is set to false: a reasoning item must not carry an id"
	OaReasoningNoData = "a reasoning item needs its encrypted_content when store is false"
	OaReasoningNext   = "a reasoning item was provided without its required following item"
	OaMaxOutput       = "max_output_tokens: must be at least 16"
	OaCacheKey        = "prompt_cache_key: a non-empty string of at most 64 characters"
	OaCacheRetention  = `prompt_cache_retention: must be "in_memory" or "24h"`
	OaCacheModel      = "prompt_cache_options and prompt_cache_breakpoint are supported for gpt-5.6 and later models"
	OaCacheCount      = "a request can write up to four prompt cache breakpoints"
	OaBreakpoint      = `prompt_cache_breakpoint: mode must be "explicit" and ttl "30m" or "12h"`
	OaCacheOptions    = `prompt_cache_options: mode must be "implicit" or "explicit"`
)

// oaExplicitCache checks the explicit prompt-cache controls of an OpenAI request body: every
// prompt_cache_breakpoint of mode explicit with a ttl of 30m or 12h (or none), at most four,
// prompt_cache_options of mode implicit or explicit and a ttl the API takes (ttls), and either
// only on gpt-5.6 and later (provider.ExplicitCacheBreakpoints).
func oaExplicitCache(body []byte, model string, opts *oaCacheOptions, ttls ...string) error {
	var v any
	_ = json.Unmarshal(body, &v)
	var paths []string
	var bad string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "prompt_cache_breakpoint" {
					paths = append(paths, path)
					bp, _ := e.(map[string]any)
					mode, _ := bp["mode"].(string)
					ttl, _ := bp["ttl"].(string)
					if mode != "explicit" || ttl != "" && ttl != "30m" && ttl != "12h" {
						bad = path + ".prompt_cache_breakpoint"
					}
					continue
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(at(path, i), e)
			}
		}
	}
	walk("", v)
	if len(paths) == 0 && opts == nil {
		return nil
	}
	if !provider.ExplicitCacheBreakpoints(model) {
		return fail("prompt_cache_options", "%s, not %s", OaCacheModel, model)
	}
	if bad != "" {
		return fail(strings.TrimPrefix(bad, "."), OaBreakpoint)
	}
	if len(paths) > 4 {
		return fail("", "%s, got %d", OaCacheCount, len(paths))
	}
	if opts != nil {
		if opts.Mode != "" && opts.Mode != "implicit" && opts.Mode != "explicit" {
			return fail("prompt_cache_options.mode", OaCacheOptions)
		}
		if opts.TTL != "" && !slices.Contains(ttls, opts.TTL) {
			return fail("prompt_cache_options.ttl", "ttl must be one of %s, got %q", strings.Join(ttls, ", "), opts.TTL)
		}
	}
	return nil
}

// oaCacheFields checks the prompt-cache fields both OpenAI APIs take.
func oaCacheFields(key *string, retention string) error {
	if key != nil && (*key == "" || len(*key) > 64) {
		return fail("prompt_cache_key", OaCacheKey)
	}
	if retention != "" && retention != "in_memory" && retention != "24h" {
		return fail("prompt_cache_retention", "%s, got %q", OaCacheRetention, retention)
	}
	return nil
}

// CheckChat runs the Chat Completions server's rules on a request body and returns the first
// broken one, or nil.
func CheckChat(body []byte) error {
	var req chatRequest
	if err := decodeWith(body, &req, map[string]string{"max_tokens": OaDeprecated}); err != nil {
		return err
	}
	if req.Model == nil || *req.Model == "" {
		return fail("", OaNoModel)
	}
	if len(req.Messages) == 0 {
		return fail("", OaNoMessages)
	}
	if err := oaCacheFields(req.PromptCacheKey, req.PromptCacheRetention); err != nil {
		return err
	}
	if err := oaExplicitCache(body, *req.Model, req.PromptCacheOptions, "30m"); err != nil {
		return err
	}
	if !isNull(req.Stop) {
		var stops []string
		if isString(req.Stop) {
			stops = []string{""}
			_ = json.Unmarshal(req.Stop, &stops[0])
		} else if err := decode("stop", req.Stop, &stops); err != nil {
			return err
		}
		if len(stops) > 4 {
			return fail("stop", OaStopCount)
		}
	}
	if err := chatTools(req.Tools); err != nil {
		return err
	}
	msgs := make([]chatMessage, len(req.Messages))
	for i, raw := range req.Messages {
		path := at("messages", i)
		if err := decode(path, raw, &msgs[i]); err != nil {
			return err
		}
		if err := chatMessageCheck(path, msgs[i]); err != nil {
			return err
		}
	}
	// Every tool call id is unique within the request.
	var ids, paths []string
	for i, m := range msgs {
		for k, c := range m.ToolCalls {
			ids, paths = append(ids, c.ID), append(paths, at(at("messages", i)+".tool_calls", k)+".id")
		}
	}
	if path, id := uniqueIDs(ids, paths); path != "" {
		return duplicate(path, OaDuplicateCallID, id)
	}
	// Pairing: tool messages follow an assistant message with tool_calls and answer its ids;
	// every id is answered before the next non-tool message.
	var open []string // ids of the last assistant message still without a tool message
	var round []string
	for i, m := range msgs {
		path := at("messages", i)
		if m.Role == "tool" {
			if !slices.Contains(round, *m.ToolCallID) || !slices.Contains(open, *m.ToolCallID) {
				return fail(path, "%s (tool_call_id %s)", OaToolAfterCalls, *m.ToolCallID)
			}
			open = slices.DeleteFunc(open, func(id string) bool { return id == *m.ToolCallID })
			continue
		}
		if len(open) > 0 {
			return fail(path, "%s; missing %s", OaMissingToolMsg, open[0])
		}
		round, open = nil, nil
		if m.Role == "assistant" {
			for _, c := range m.ToolCalls {
				round = append(round, c.ID)
			}
			open = slices.Clone(round)
		}
	}
	if len(open) > 0 {
		return fail(at("messages", len(msgs)-1), "%s; missing %s", OaMissingToolMsg, open[0])
	}
	return roleOrder(len(msgs), func(i int) string { return msgs[i].Role })
}

// roleOrder checks the adapter's role rules on a list of roles: no two consecutive messages of
// one role (tool messages excepted), and the first non-system message a user message.
func roleOrder(n int, role func(int) string) error {
	for i := 0; i < n; i++ {
		if r := role(i); i > 0 && r != "tool" && r == role(i-1) {
			return fail(at("messages", i), OaSameRole)
		}
	}
	for i := 0; i < n; i++ {
		switch role(i) {
		case "system", "developer":
			continue
		case "user":
			return nil
		}
		return fail(at("messages", i), OaFirstUser)
	}
	return fail("messages", OaFirstUser)
}

// decodeWith is decode for a request body that names the known fields refused with a specific
// message.
func decodeWith(body []byte, v any, refused map[string]string) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return fail("", "%s", err.Error())
	}
	for k, msg := range refused {
		if _, ok := top[k]; ok {
			return fail(k, "%s", msg)
		}
	}
	return decode("", body, v)
}

func chatMessageCheck(path string, m chatMessage) error {
	switch m.Role {
	case "system", "developer":
		return chatTextContent(path+".content", m.Content, false)
	case "user":
		return chatUserContent(path+".content", m.Content)
	case "assistant":
		hasContent := !isNull(m.Content)
		if hasContent {
			if err := chatTextContent(path+".content", m.Content, false); err != nil {
				return err
			}
		}
		if !hasContent && len(m.ToolCalls) == 0 {
			return fail(path, OaAssistantEmpty)
		}
		for k, c := range m.ToolCalls {
			cp := at(path+".tool_calls", k)
			if c.ID == "" || c.Type != "function" || c.Function.Name == "" || c.Function.Arguments == nil {
				return fail(cp, "a tool call needs an id, type function, a function name and arguments (a string)")
			}
			if err := oaCallID(cp+".id", c.ID, maxChatCallID); err != nil {
				return err
			}
		}
		return nil
	case "tool":
		if m.ToolCallID == nil || *m.ToolCallID == "" {
			return fail(path+".tool_call_id", "field required")
		}
		if err := oaCallID(path+".tool_call_id", *m.ToolCallID, maxChatCallID); err != nil {
			return err
		}
		return chatTextContent(path+".content", m.Content, false)
	}
	return fail(path+".role", "must be system, developer, user, assistant or tool, got %q", m.Role)
}

// chatTextContent checks content that is a string or text parts; neither may be blank.
func chatTextContent(path string, raw json.RawMessage, _ bool) error {
	if isString(raw) {
		var s string
		_ = json.Unmarshal(raw, &s)
		if blank(s) {
			return fail(path, OaBlankText)
		}
		return nil
	}
	var parts []json.RawMessage
	if err := decode(path, raw, &parts); err != nil {
		return err
	}
	if len(parts) == 0 {
		return fail(path, OaBlankText)
	}
	for i, r := range parts {
		var p struct {
			Type                  string        `json:"type"`
			Text                  string        `json:"text"`
			PromptCacheBreakpoint *oaBreakpoint `json:"prompt_cache_breakpoint"`
		}
		if json.Unmarshal(r, &p) != nil || p.Type != "text" {
			return fail(at(path, i), "%s: only text parts here", OaPartRole)
		}
		if err := decode(at(path, i), r, &p); err != nil {
			return err
		}
		if blank(p.Text) {
			return fail(at(path, i)+".text", OaBlankText)
		}
	}
	return nil
}

func chatUserContent(path string, raw json.RawMessage) error {
	if isString(raw) {
		return chatTextContent(path, raw, false)
	}
	var parts []json.RawMessage
	if err := decode(path, raw, &parts); err != nil {
		return err
	}
	if len(parts) == 0 {
		return fail(path, OaBlankText)
	}
	for i, r := range parts {
		pp := at(path, i)
		var p struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
			File *struct {
				FileData string `json:"file_data"`
				Filename string `json:"filename"`
			} `json:"file"`
			PromptCacheBreakpoint *oaBreakpoint `json:"prompt_cache_breakpoint"`
		}
		if err := decode(pp, r, &p); err != nil {
			return err
		}
		switch p.Type {
		case "text":
			if p.Text == nil || blank(*p.Text) {
				return fail(pp+".text", OaBlankText)
			}
		case "image_url":
			if p.ImageURL == nil || !dataURL(p.ImageURL.URL, "image/png", "image/jpeg", "image/gif", "image/webp") {
				return fail(pp+".image_url", OaImageURL)
			}
		case "file":
			if p.File == nil || p.File.Filename == "" || !dataURL(p.File.FileData, "application/pdf") {
				return fail(pp+".file", OaFileData)
			}
		default:
			return fail(pp+".type", "unknown content part type %q", p.Type)
		}
	}
	return nil
}

// dataURL reports whether u is "data:<one of types>;base64,<valid base64>".
func dataURL(u string, types ...string) bool {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return false
	}
	mt, data, ok := strings.Cut(rest, ";base64,")
	if !ok || !slices.Contains(types, mt) || data == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(data)
	return err == nil
}

func chatTools(tools []json.RawMessage) error {
	var names []string
	for i, raw := range tools {
		path := at("tools", i)
		var t chatTool
		if err := decode(path, raw, &t); err != nil {
			return err
		}
		if t.Type != "function" {
			return fail(path+".type", "this server takes function tools, got %q", t.Type)
		}
		if !functionName.MatchString(t.Function.Name) {
			return fail(path+".function.name", "%s, got %q", OaToolName, t.Function.Name)
		}
		if slices.Contains(names, t.Function.Name) {
			return fail(path+".function.name", "%s: %s", OaDuplicateTool, t.Function.Name)
		}
		names = append(names, t.Function.Name)
		if err := objectSchema(path+".function.parameters", t.Function.Parameters, OaToolSchema); err != nil {
			return err
		}
	}
	return nil
}
