package strict

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
)

// The Anthropic Messages request, as far as the adapter uses it. Extra keys the adapter may
// pass through (thinking, metadata, service_tier) are known fields too.
type anMessages struct {
	Model         *string           `json:"model"`
	MaxTokens     *int64            `json:"max_tokens"`
	Messages      []json.RawMessage `json:"messages"`
	System        json.RawMessage   `json:"system"`
	StopSequences []string          `json:"stop_sequences"`
	Tools         []json.RawMessage `json:"tools"`
	Thinking      *anThinking       `json:"thinking"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	ServiceTier  string   `json:"service_tier"`
	CacheControl *anCache `json:"cache_control"`
}

// anCache is a cache_control marker.
type anCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

type anThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Source    json.RawMessage `json:"source"`
	Title     string          `json:"title"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	Content   json.RawMessage `json:"content"`
	Thinking  *string         `json:"thinking"`
	Signature *string         `json:"signature"`
	Data      *string         `json:"data"`
	// CacheControl marks a prompt-cache breakpoint (text, image, document, tool_use and
	// tool_result blocks).
	CacheControl *anCache `json:"cache_control"`
}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anCache        `json:"cache_control"`
}

var anToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// The Anthropic rules' messages, one per rule, so a test can tell which rule refused it.
const (
	AnNoModel         = "model: field required"
	AnNoMaxTokens     = "max_tokens: field required (an integer of at least 1)"
	AnNoMessages      = "messages: at least one message is required"
	AnFirstUser       = "the first message must use the user role"
	AnSameRole        = "consecutive messages with the same role; merge them into one"
	AnBlankText       = "text content blocks must contain non-whitespace text"
	AnEmptyContent    = "all messages must have non-empty content"
	AnMissingResults  = "tool_use ids were found without tool_result blocks immediately after"
	AnResultsFirst    = "tool_result blocks must come first in the user message that follows tool_use blocks"
	AnUnexpectedID    = "unexpected tool_use_id found in tool_result blocks"
	AnImageType       = "image source media_type must be image/jpeg, image/png, image/gif or image/webp"
	AnBadBase64       = "source data is not valid base64"
	AnDocumentType    = "document source must be a base64 application/pdf or a text/plain text source"
	AnThinkingFirst   = "when thinking is enabled, the final assistant message in a tool loop must start with a thinking or redacted_thinking block"
	AnSignature       = "thinking blocks must carry their signature"
	AnToolName        = "tools: name must match ^[a-zA-Z0-9_-]{1,128}$"
	AnToolSchema      = `tools: input_schema must be a JSON object with "type": "object"`
	AnDuplicateTool   = "tools: tool names must be unique"
	AnSystemText      = "system content must be text blocks"
	AnUserOnlyContent = "this block type is not allowed in this role"
	AnStopSequence    = "stop_sequences: each stop sequence must contain non-whitespace text"
	AnCacheType       = `cache_control: type must be "ephemeral" and ttl "5m" or "1h"`
	AnCacheCount      = "A maximum of 4 blocks with cache_control may be provided"
	AnCacheTTLOrder   = `a ttl="1h" cache_control block must not come after a ttl="5m" cache_control block`
	AnCacheThinking   = "cache_control cannot be set on thinking or redacted_thinking blocks"
)

// CheckAnthropic runs the Anthropic server's rules on a Messages request body and returns the
// first broken one (its path and message), or nil.
func CheckAnthropic(body []byte) error {
	var req anMessages
	if err := decode("", body, &req); err != nil {
		return err
	}
	if req.Model == nil || *req.Model == "" {
		return fail("", AnNoModel)
	}
	if req.MaxTokens == nil || *req.MaxTokens < 1 {
		return fail("", AnNoMaxTokens)
	}
	for i, s := range req.StopSequences {
		if blank(s) {
			return fail(at("stop_sequences", i), AnStopSequence)
		}
	}
	if err := anTools(req.Tools); err != nil {
		return err
	}
	if !isNull(req.System) {
		if err := anSystem("system", req.System); err != nil {
			return err
		}
	}
	if len(req.Messages) == 0 {
		return fail("", AnNoMessages)
	}
	if err := anCacheMarkers(body); err != nil {
		return err
	}
	msgs := make([]anMessage, len(req.Messages))
	blocks := make([][]anBlock, len(req.Messages))
	for i, raw := range req.Messages {
		path := at("messages", i)
		if err := decode(path, raw, &msgs[i]); err != nil {
			return err
		}
		m := msgs[i]
		switch m.Role {
		case "user", "assistant":
		case "system":
			if err := anSystem(path+".content", m.Content); err != nil {
				return err
			}
		default:
			return fail(path+".role", "must be user, assistant or system, got %q", m.Role)
		}
		if m.Role == "system" {
			continue
		}
		bs, err := anContent(path+".content", m.Role, m.Content)
		if err != nil {
			return err
		}
		blocks[i] = bs
	}
	// Every tool_use id is unique within the request.
	var ids, paths []string
	for i, bs := range blocks {
		for k, b := range bs {
			if b.Type == "tool_use" {
				ids, paths = append(ids, b.ID), append(paths, at(at("messages", i)+".content", k)+".id")
			}
		}
	}
	if path, id := uniqueIDs(ids, paths); path != "" {
		return duplicate(path, AnDuplicateID, id)
	}
	// Pairing, in message order: the message after an assistant's tool_use blocks is a user
	// message whose first blocks are tool_results answering every one of those ids and no
	// other; tool_results stand first; no tool_result answers anything but the message before.
	toolUses := func(i int) []string {
		var ids []string
		if i >= 0 && msgs[i].Role == "assistant" {
			for _, b := range blocks[i] {
				if b.Type == "tool_use" {
					ids = append(ids, b.ID)
				}
			}
		}
		return ids
	}
	for i, m := range msgs {
		path := at("messages", i)
		if m.Role == "user" {
			k := 0
			for k < len(blocks[i]) && blocks[i][k].Type == "tool_result" {
				k++
			}
			for _, b := range blocks[i][k:] {
				if b.Type == "tool_result" {
					return fail(path, AnResultsFirst)
				}
			}
			prev := toolUses(i - 1)
			for _, b := range blocks[i][:k] {
				if !slices.Contains(prev, b.ToolUseID) {
					return fail(path, "%s: %s", AnUnexpectedID, b.ToolUseID)
				}
			}
		}
		ids := toolUses(i)
		if len(ids) == 0 || i+1 == len(msgs) {
			continue // none, or the model's own last turn: a client sends results next
		}
		var answered []string
		if msgs[i+1].Role == "user" {
			for _, b := range blocks[i+1] {
				if b.Type == "tool_result" {
					answered = append(answered, b.ToolUseID)
				}
			}
		}
		for _, id := range ids {
			if !slices.Contains(answered, id) {
				return fail(path, "%s: %s", AnMissingResults, id)
			}
		}
	}
	for i, m := range msgs {
		if i == 0 && m.Role != "user" {
			return fail(at("messages", i), AnFirstUser)
		}
		if i > 0 && m.Role == msgs[i-1].Role {
			return fail(at("messages", i), AnSameRole)
		}
	}
	// Thinking: in a tool loop (the last message is a user message of tool results), the
	// assistant message before it must start with its thinking block.
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		last := len(msgs) - 1
		if last > 0 && msgs[last].Role == "user" && len(blocks[last]) > 0 && blocks[last][0].Type == "tool_result" &&
			msgs[last-1].Role == "assistant" {
			if first := blocks[last-1][0].Type; first != "thinking" && first != "redacted_thinking" {
				return fail(at("messages", last-1), AnThinkingFirst)
			}
		}
	}
	return nil
}

func anSystem(path string, raw json.RawMessage) error {
	if isString(raw) {
		var s string
		_ = json.Unmarshal(raw, &s)
		if blank(s) {
			return fail(path, AnBlankText)
		}
		return nil
	}
	var bs []json.RawMessage
	if err := decode(path, raw, &bs); err != nil {
		return err
	}
	if len(bs) == 0 {
		return fail(path, AnEmptyContent)
	}
	for i, b := range bs {
		var blk struct {
			Type         string   `json:"type"`
			Text         string   `json:"text"`
			CacheControl *anCache `json:"cache_control"`
		}
		if json.Unmarshal(b, &blk) != nil || blk.Type != "text" {
			return fail(at(path, i), AnSystemText)
		}
		if err := decode(at(path, i), b, &blk); err != nil {
			return err
		}
		if blank(blk.Text) {
			return fail(at(path, i)+".text", AnBlankText)
		}
	}
	return nil
}

func anContent(path, role string, raw json.RawMessage) ([]anBlock, error) {
	if isString(raw) {
		var s string
		_ = json.Unmarshal(raw, &s)
		if blank(s) {
			return nil, fail(path, AnBlankText)
		}
		return []anBlock{{Type: "text", Text: &s}}, nil
	}
	if !isArray(raw) {
		return nil, fail(path, "content must be a string or a list of content blocks")
	}
	var raws []json.RawMessage
	if err := decode(path, raw, &raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, fail(path, AnEmptyContent)
	}
	out := make([]anBlock, len(raws))
	for i, r := range raws {
		bp := at(path, i)
		if err := decode(bp, r, &out[i]); err != nil {
			return nil, err
		}
		if err := anBlockCheck(bp, role, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func anBlockCheck(path, role string, b anBlock) error {
	only := func(roles ...string) error {
		if !slices.Contains(roles, role) {
			return fail(path, "%s: %s in a %s message", AnUserOnlyContent, b.Type, role)
		}
		return nil
	}
	switch b.Type {
	case "text":
		if b.Text == nil {
			return fail(path+".text", "field required")
		}
		if blank(*b.Text) {
			return fail(path+".text", AnBlankText)
		}
	case "image":
		if err := only("user"); err != nil {
			return err
		}
		return anImage(path+".source", b.Source)
	case "document":
		if err := only("user"); err != nil {
			return err
		}
		return anDocument(path+".source", b.Source)
	case "tool_use":
		if err := only("assistant"); err != nil {
			return err
		}
		if b.ID == "" || b.Name == "" {
			return fail(path, "tool_use blocks need an id and a name")
		}
		if err := anCallID(path+".id", b.ID); err != nil {
			return err
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
			return fail(path+".input", "input must be a JSON object")
		}
	case "tool_result":
		if err := only("user"); err != nil {
			return err
		}
		if b.ToolUseID == "" {
			return fail(path+".tool_use_id", "field required")
		}
		if err := anCallID(path+".tool_use_id", b.ToolUseID); err != nil {
			return err
		}
		return anResultContent(path+".content", b.Content)
	case "thinking":
		if err := only("assistant"); err != nil {
			return err
		}
		if b.Thinking == nil || b.Signature == nil || *b.Signature == "" {
			return fail(path, AnSignature)
		}
	case "redacted_thinking":
		if err := only("assistant"); err != nil {
			return err
		}
		if b.Data == nil || *b.Data == "" {
			return fail(path+".data", "field required")
		}
	default:
		return fail(path+".type", "unknown content block type %q", b.Type)
	}
	return nil
}

func anResultContent(path string, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	if isString(raw) {
		var s string
		_ = json.Unmarshal(raw, &s)
		if blank(s) {
			return fail(path, AnBlankText)
		}
		return nil
	}
	var raws []json.RawMessage
	if err := decode(path, raw, &raws); err != nil {
		return err
	}
	for i, r := range raws {
		var b anBlock
		bp := at(path, i)
		if err := decode(bp, r, &b); err != nil {
			return err
		}
		switch b.Type {
		case "text":
			if b.Text == nil || blank(*b.Text) {
				return fail(bp+".text", AnBlankText)
			}
		case "image":
			if err := anImage(bp+".source", b.Source); err != nil {
				return err
			}
		case "document":
			if err := anDocument(bp+".source", b.Source); err != nil {
				return err
			}
		default:
			return fail(bp+".type", "a tool_result holds text, image and document blocks, got %q", b.Type)
		}
	}
	return nil
}

func anImage(path string, raw json.RawMessage) error {
	var s anSource
	if err := decode(path, raw, &s); err != nil {
		return err
	}
	if s.Type != "base64" {
		return fail(path+".type", "this server takes base64 sources, got %q", s.Type)
	}
	switch s.MediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return fail(path+".media_type", "%s, got %q", AnImageType, s.MediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(s.Data); err != nil || s.Data == "" {
		return fail(path+".data", AnBadBase64)
	}
	return nil
}

func anDocument(path string, raw json.RawMessage) error {
	var s anSource
	if err := decode(path, raw, &s); err != nil {
		return err
	}
	switch {
	case s.Type == "base64" && s.MediaType == "application/pdf":
		if _, err := base64.StdEncoding.DecodeString(s.Data); err != nil || s.Data == "" {
			return fail(path+".data", AnBadBase64)
		}
	case s.Type == "text" && s.MediaType == "text/plain":
		if blank(s.Data) {
			return fail(path+".data", AnBlankText)
		}
	default:
		return fail(path, "%s, got type %q media_type %q", AnDocumentType, s.Type, s.MediaType)
	}
	return nil
}

func anTools(tools []json.RawMessage) error {
	var names []string
	for i, raw := range tools {
		path := at("tools", i)
		var t anTool
		if err := decode(path, raw, &t); err != nil {
			return err
		}
		if !anToolName.MatchString(t.Name) {
			return fail(path+".name", "%s, got %q", AnToolName, t.Name)
		}
		if slices.Contains(names, t.Name) {
			return fail(path+".name", "%s: %s", AnDuplicateTool, t.Name)
		}
		names = append(names, t.Name)
		if err := objectSchema(path+".input_schema", t.InputSchema, AnToolSchema); err != nil {
			return err
		}
	}
	return nil
}

// objectSchema checks that raw is a JSON object whose "type" is "object".
func objectSchema(path string, raw json.RawMessage, msg string) error {
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return fail(path, "%s", msg)
	}
	var typ string
	if json.Unmarshal(s["type"], &typ) != nil || typ != "object" {
		return fail(path, "%s", msg)
	}
	return nil
}

// anCacheMarkers checks the request's cache_control markers, in the order the API renders a
// request (tools, system, messages; the top-level marker stands for the last block): each of
// type ephemeral with a ttl of 5m or 1h (absent: 5m), none on a thinking block, at most
// MaxBreakpoints in all, and no 1h marker after a 5m one (see the rules table, cache.go).
func anCacheMarkers(body []byte) error {
	seq, err := anthropicBlocks(body)
	if err != nil {
		return err
	}
	n, short := 0, ""
	for _, b := range seq.blocks {
		if b.mark == nil {
			continue
		}
		if b.thinking {
			return fail(b.path, AnCacheThinking)
		}
		n++
		if err := checkTTL(b.path, b.mark); err != nil {
			return err
		}
		ttl := b.mark.TTL
		if ttl == "" {
			ttl = "5m"
		}
		if ttl == "1h" && short != "" {
			return fail(b.path, "%s (the 5m one at %s)", AnCacheTTLOrder, short)
		}
		if ttl == "5m" && short == "" {
			short = b.path
		}
	}
	if seq.auto != nil {
		n++
		if err := checkTTL("cache_control", seq.auto); err != nil {
			return err
		}
		if ttl := seq.auto.TTL; ttl == "1h" && short != "" {
			return fail("cache_control", "%s (the 5m one at %s)", AnCacheTTLOrder, short)
		}
	}
	if n > MaxBreakpoints {
		return fail("", "%s. Found %d.", AnCacheCount, n)
	}
	return nil
}

func checkTTL(path string, c *anCache) error {
	if c.Type != "ephemeral" || c.TTL != "" && c.TTL != "5m" && c.TTL != "1h" {
		return fail(path+".cache_control", "%s, got type %q ttl %q", AnCacheType, c.Type, c.TTL)
	}
	return nil
}
