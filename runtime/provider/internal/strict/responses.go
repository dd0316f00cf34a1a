package strict

import (
	"encoding/json"
	"slices"
)

// The Responses API request, as far as the adapter uses it (plus the Extra keys tests pass).
type rsRequest struct {
	Model           *string           `json:"model"`
	Input           json.RawMessage   `json:"input"`
	Store           *bool             `json:"store"`
	Include         []string          `json:"include"`
	MaxOutputTokens *int64            `json:"max_output_tokens"`
	Temperature     *float64          `json:"temperature"`
	TopP            *float64          `json:"top_p"`
	Tools           []json.RawMessage `json:"tools"`
	Reasoning       *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	Instructions         string          `json:"instructions"`
	User                 string          `json:"user"`
	PromptCacheKey       *string         `json:"prompt_cache_key"`
	PromptCacheRetention string          `json:"prompt_cache_retention"`
	PromptCacheOptions   *oaCacheOptions `json:"prompt_cache_options"`
}

type rsItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ID               *string         `json:"id"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	Status           string          `json:"status"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// CheckResponses runs the Responses server's rules on a request body (store must be false) and
// returns the first broken one, or nil.
func CheckResponses(body []byte) error { return checkResponses(body, false) }

func checkResponses(body []byte, allowStore bool) error {
	var req rsRequest
	if err := decodeWith(body, &req, map[string]string{"stop": `unknown field "stop": the Responses API has no stop sequences`}); err != nil {
		return err
	}
	if req.Model == nil || *req.Model == "" {
		return fail("", OaNoModel)
	}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens < 16 {
		return fail("max_output_tokens", OaMaxOutput)
	}
	if err := oaCacheFields(req.PromptCacheKey, req.PromptCacheRetention); err != nil {
		return err
	}
	if err := oaExplicitCache(body, *req.Model, req.PromptCacheOptions, "30m", "12h"); err != nil {
		return err
	}
	store := req.Store != nil && *req.Store
	if store && !allowStore || req.Store == nil && !allowStore {
		return fail("store", OaStoreFalse)
	}
	if !store && !slices.Contains(req.Include, "reasoning.encrypted_content") {
		return fail("include", OaInclude)
	}
	if err := rsTools(req.Tools); err != nil {
		return err
	}
	var raws []json.RawMessage
	if err := decode("input", req.Input, &raws); err != nil {
		return err
	}
	if len(raws) == 0 {
		return fail("input", OaNoMessages)
	}
	items := make([]rsItem, len(raws))
	for i, r := range raws {
		if err := decode(at("input", i), r, &items[i]); err != nil {
			return err
		}
		if items[i].Type == "" && items[i].Role != "" {
			items[i].Type = "message"
		}
		if err := rsItemCheck(at("input", i), items[i], store); err != nil {
			return err
		}
	}
	// Every function_call's call_id is unique within the request.
	var ids, paths []string
	for i, it := range items {
		if it.Type == "function_call" {
			ids, paths = append(ids, it.CallID), append(paths, at("input", i)+".call_id")
		}
	}
	if path, id := uniqueIDs(ids, paths); path != "" {
		return duplicate(path, OaDuplicateCallID, id)
	}
	// Pairing: a function_call_output answers an earlier function_call of the same turn; every
	// function_call is answered before the next message item; a reasoning item is followed by
	// the item it led to (a function_call or an assistant message).
	var open, calls []string
	for i, it := range items {
		path := at("input", i)
		switch it.Type {
		case "function_call":
			calls = append(calls, it.CallID)
			open = append(open, it.CallID)
		case "function_call_output":
			if !slices.Contains(open, it.CallID) {
				return fail(path, "%s with call_id %s", OaOrphanOutput, it.CallID)
			}
			open = slices.DeleteFunc(open, func(id string) bool { return id == it.CallID })
		case "message", "reasoning":
			if len(open) > 0 {
				return fail(path, "%s %s", OaNoOutput, open[0])
			}
			calls = calls[:0]
		}
		if it.Type == "reasoning" {
			if i+1 == len(items) || (items[i+1].Type != "function_call" && items[i+1].Type != "reasoning" &&
				!(items[i+1].Type == "message" && items[i+1].Role == "assistant")) {
				return fail(path, OaReasoningNext)
			}
		}
	}
	if len(open) > 0 {
		return fail(at("input", len(items)-1), "%s %s", OaNoOutput, open[0])
	}
	// Role order over the message items, with each turn's function calls and outputs as the
	// assistant's and the tool's.
	var roles []string
	for _, it := range items {
		switch it.Type {
		case "message":
			roles = append(roles, it.Role)
		case "function_call_output":
			roles = append(roles, "tool")
		}
	}
	return roleOrder(len(roles), func(i int) string { return roles[i] })
}

func rsItemCheck(path string, it rsItem, store bool) error {
	switch it.Type {
	case "message":
		if it.ID != nil && !store {
			return fail(path+".id", "item ids are not persisted when store is false; send the item without its id")
		}
		switch it.Role {
		case "system", "developer":
			return rsContent(path+".content", it.Content, "input_text")
		case "user":
			return rsContent(path+".content", it.Content, "input_text", "input_image", "input_file")
		case "assistant":
			return rsContent(path+".content", it.Content, "output_text", "refusal")
		}
		return fail(path+".role", "must be system, developer, user or assistant, got %q", it.Role)
	case "function_call":
		if it.ID != nil && !store {
			return fail(path+".id", "item ids are not persisted when store is false; send the item without its id")
		}
		if it.CallID == "" || it.Name == "" || it.Arguments == nil {
			return fail(path, "a function_call needs call_id, name and arguments (a string)")
		}
		if err := oaCallID(path+".call_id", it.CallID, maxResponsesCallID); err != nil {
			return err
		}
	case "function_call_output":
		if it.CallID == "" {
			return fail(path+".call_id", "field required")
		}
		if err := oaCallID(path+".call_id", it.CallID, maxResponsesCallID); err != nil {
			return err
		}
		if isString(it.Output) {
			var s string
			_ = json.Unmarshal(it.Output, &s)
			if blank(s) {
				return fail(path+".output", OaBlankText)
			}
			return nil
		}
		return rsContent(path+".output", it.Output, "input_text", "input_image", "input_file")
	case "reasoning":
		if it.ID != nil && !store {
			return fail(path+".id", OaReasoningID)
		}
		if !store && (it.EncryptedContent == nil || *it.EncryptedContent == "") {
			return fail(path, OaReasoningNoData)
		}
		var summary []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := decode(path+".summary", it.Summary, &summary); err != nil {
			return err
		}
	default:
		return fail(path+".type", "unknown input item type %q", it.Type)
	}
	return nil
}

// rsContent checks a message's content or an output list: a non-blank string, or a non-empty
// list of parts of the allowed types.
func rsContent(path string, raw json.RawMessage, allowed ...string) error {
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
		pp := at(path, i)
		var p struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			ImageURL *string `json:"image_url"`
			Detail   string  `json:"detail"`
			FileData *string `json:"file_data"`
			Filename *string `json:"filename"`
			// PromptCacheBreakpoint is checked by oaExplicitCache.
			PromptCacheBreakpoint *oaBreakpoint `json:"prompt_cache_breakpoint"`
		}
		if err := decode(pp, r, &p); err != nil {
			return err
		}
		if !slices.Contains(allowed, p.Type) {
			return fail(pp+".type", "%s: %q", OaPartRole, p.Type)
		}
		switch p.Type {
		case "input_text", "output_text":
			if p.Text == nil || blank(*p.Text) {
				return fail(pp+".text", OaBlankText)
			}
		case "input_image":
			if p.ImageURL == nil || !dataURL(*p.ImageURL, "image/png", "image/jpeg", "image/gif", "image/webp") {
				return fail(pp+".image_url", OaImageURL)
			}
		case "input_file":
			if p.FileData == nil || p.Filename == nil || *p.Filename == "" || !dataURL(*p.FileData, "application/pdf") {
				return fail(pp, OaFileData)
			}
		}
	}
	return nil
}

func rsTools(tools []json.RawMessage) error {
	var names []string
	for i, raw := range tools {
		path := at("tools", i)
		var t rsTool
		if err := decode(path, raw, &t); err != nil {
			return err
		}
		if t.Type != "function" {
			return fail(path+".type", "this server takes function tools, got %q", t.Type)
		}
		if t.Strict == nil {
			return fail(path+".strict", "field required")
		}
		if !functionName.MatchString(t.Name) {
			return fail(path+".name", "%s, got %q", OaToolName, t.Name)
		}
		if slices.Contains(names, t.Name) {
			return fail(path+".name", "%s: %s", OaDuplicateTool, t.Name)
		}
		names = append(names, t.Name)
		if err := objectSchema(path+".parameters", t.Parameters, OaToolSchema); err != nil {
			return err
		}
	}
	return nil
}
