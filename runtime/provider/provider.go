package provider

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/personagen/personagen/runtime/chat"
)

// The provider names a spec's model.provider and chat.ModelSettings.Provider take.
const (
	// Anthropic is the Anthropic Messages API (runtime/provider/anthropic).
	Anthropic = "anthropic"
	// OpenAI is the OpenAI Chat Completions API (runtime/provider/openai, NewChat).
	OpenAI = "openai"
	// OpenAIResponses is the OpenAI Responses API (runtime/provider/openai, NewResponses).
	OpenAIResponses = "openai-responses"
)

// MaxChatStopSequences is the most stop sequences the Chat Completions API takes.
const MaxChatStopSequences = 4

// MinResponsesMaxTokens is the smallest max_output_tokens the Responses API takes.
const MinResponsesMaxTokens = 16

// SettingError says that a provider cannot take one model setting. Setting is the setting's
// key under a spec's model mapping ("temperature", "top_p", "stop", "extra.max_tokens") and
// Reason says why and what to do instead.
type SettingError struct {
	Provider string
	Setting  string
	Reason   string
}

// Error renders "provider anthropic does not accept model.temperature: <reason>", the same
// text validate prints at the setting's spec line and an adapter returns at run time.
func (e *SettingError) Error() string {
	return fmt.Sprintf("provider %s does not accept model.%s: %s", e.Provider, e.Setting, e.Reason)
}

// ErrUnknownProvider is returned (wrapped) by CheckSettings for a provider name that is not
// one of Anthropic, OpenAI and OpenAIResponses.
var ErrUnknownProvider = errors.New("unknown model provider")

// managed lists, per provider, the request-body fields an adapter fills from the settings and
// the messages, which ModelSettings.Extra may not set, with what to do instead.
var managed = map[string]map[string]string{
	Anthropic: {
		"model":          "set model.name instead",
		"messages":       "the messages come from the persona's chain",
		"system":         "system prompts come from the persona's chain",
		"tools":          "tools come from the persona's tools",
		"max_tokens":     "set model.max_tokens instead",
		"stop_sequences": "set model.stop instead",
		"temperature":    noSampling("temperature"),
		"top_p":          noSampling("top_p"),
		"top_k":          noSampling("top_k"),
	},
	OpenAI: {
		"model":                 "set model.name instead",
		"messages":              "the messages come from the persona's chain",
		"tools":                 "tools come from the persona's tools",
		"max_completion_tokens": "set model.max_tokens instead",
		"max_tokens":            "set model.max_tokens instead (sent as max_completion_tokens; max_tokens is deprecated)",
		"stop":                  "set model.stop instead",
		"temperature":           "set model.temperature instead",
		"top_p":                 "set model.top_p instead",
	},
	OpenAIResponses: {
		"model":             "set model.name instead",
		"input":             "the input comes from the persona's chain",
		"tools":             "tools come from the persona's tools",
		"max_output_tokens": "set model.max_tokens instead",
		"temperature":       "set model.temperature instead",
		"top_p":             "set model.top_p instead",
		"include":           "the adapter sets include to [\"reasoning.encrypted_content\"] itself",
		"stop":              "the Responses API has no stop sequences",
	},
}

func noSampling(name string) string {
	return "the Anthropic Messages API (anthropic-sdk-go v2.15.0) has no " + name + " parameter; remove it"
}

// CheckSettings reports the settings in s that provider cannot take, as a *SettingError per
// setting in the order name, max_tokens, temperature, top_p, stop, extra (by key), joined with
// errors.Join; nil when all are accepted. The rules:
//
//   - anthropic: temperature and top_p are refused (the Messages API of anthropic-sdk-go
//     v2.15.0 has no sampling parameters); stop becomes stop_sequences; max_tokens is required
//     by the API, so the adapter sends its DefaultMaxTokens when it is 0.
//   - openai (Chat Completions): max_tokens is sent as max_completion_tokens (not the
//     deprecated max_tokens); at most MaxChatStopSequences stop sequences.
//   - openai-responses: stop is refused (the Responses API has no stop sequences); max_tokens
//     is sent as max_output_tokens and must be at least MinResponsesMaxTokens.
//   - every provider: an extra key may not name a field the adapter fills itself (model,
//     messages or input, tools, the token limit, the sampling settings, stop sequences, and for
//     the Responses API include) nor one the provider refuses; extra keys are otherwise sent as
//     top-level fields of the request body, unchanged.
//
// An unknown provider gives an error wrapping ErrUnknownProvider. s.Provider is not consulted:
// the caller says which provider it checks for.
func CheckSettings(provider string, s chat.ModelSettings) error {
	fields, ok := managed[provider]
	if !ok {
		return fmt.Errorf("%w %q: use %s, %s or %s", ErrUnknownProvider, provider, Anthropic, OpenAI, OpenAIResponses)
	}
	var errs []error
	refuse := func(setting, reason string) {
		errs = append(errs, &SettingError{Provider: provider, Setting: setting, Reason: reason})
	}
	switch provider {
	case Anthropic:
		if s.Temperature != nil {
			refuse("temperature", noSampling("temperature"))
		}
		if s.TopP != nil {
			refuse("top_p", noSampling("top_p"))
		}
	case OpenAI:
		if len(s.Stop) > MaxChatStopSequences {
			refuse("stop", fmt.Sprintf("the Chat Completions API takes at most %d stop sequences, this has %d; remove %d",
				MaxChatStopSequences, len(s.Stop), len(s.Stop)-MaxChatStopSequences))
		}
	case OpenAIResponses:
		if s.MaxTokens > 0 && s.MaxTokens < MinResponsesMaxTokens {
			refuse("max_tokens", fmt.Sprintf("the Responses API takes max_output_tokens of at least %d, this is %d; raise it",
				MinResponsesMaxTokens, s.MaxTokens))
		}
		if len(s.Stop) > 0 {
			refuse("stop", "the Responses API has no stop sequences; remove model.stop, or use provider openai (Chat Completions)")
		}
	}
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if reason, ok := fields[k]; ok {
			refuse("extra."+k, reason+" (model.extra may not set a field the adapter fills)")
		}
	}
	return errors.Join(errs...)
}

// CheckFor is CheckSettings for an adapter of provider: it also refuses settings that name
// another provider in s.Provider (a persona written for one API run on another), with an error
// saying both. Adapters call it before their first request.
func CheckFor(provider string, s chat.ModelSettings) error {
	if s.Provider != "" && s.Provider != provider {
		if !slices.Contains([]string{Anthropic, OpenAI, OpenAIResponses}, s.Provider) {
			return fmt.Errorf("%w %q in model.provider: use %s, %s or %s", ErrUnknownProvider, s.Provider, Anthropic, OpenAI, OpenAIResponses)
		}
		return fmt.Errorf("model settings are written for provider %s, but this is the %s adapter; change model.provider or the model the host passes", s.Provider, provider)
	}
	return CheckSettings(provider, s)
}

// SettingErrors returns the *SettingError values err holds (err as returned by CheckSettings or
// CheckFor), in order; nil when it holds none.
func SettingErrors(err error) []*SettingError {
	var out []*SettingError
	var walk func(error)
	walk = func(e error) {
		if se, ok := e.(*SettingError); ok {
			out = append(out, se)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// ErrMalformedResponse is returned (wrapped) by every adapter's Generate, inside a permanent
// *chat.CallError of the answer's status, and by the mapping functions (anthropic.Response,
// openai.ChatResponse, openai.ResponsesResponse), when the provider answered with success but
// the body is not an answer of its API: not JSON, not a JSON
// object (null, an array, a string), JSON of another content type, or an object that lacks
// what the API always sends (for example a Messages API answer without "type": "message", a
// chat completion without a choice holding a message, a Responses API answer without
// "object": "response"). The error names the API, what is missing and the start of the body. A
// runner treats it as a failed model call: no answer is recorded.
var ErrMalformedResponse = errors.New("malformed model answer")

// ExplicitCacheBreakpoints reports whether the OpenAI model takes explicit prompt-cache
// breakpoints (prompt_cache_breakpoint on content parts) and prompt_cache_options: gpt-5.6 and
// later, as openai-go v3.98.0 documents them ("Supported for gpt-5.6 and later models"). It reads
// the name as gpt-<major>.<minor> with any suffix (gpt-5.6-mini, gpt-6); other names are false.
func ExplicitCacheBreakpoints(model string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(model), "gpt-")
	if !ok {
		return false
	}
	num := func(s string) (int, string) {
		n, i := 0, 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			n = n*10 + int(s[i]-'0')
		}
		if i == 0 {
			return -1, s
		}
		return n, s[i:]
	}
	major, rest := num(rest)
	if major < 0 {
		return false
	}
	minor := 0
	if r, ok := strings.CutPrefix(rest, "."); ok {
		if minor, _ = num(r); minor < 0 {
			return false
		}
	}
	return major > 5 || major == 5 && minor >= 6
}
