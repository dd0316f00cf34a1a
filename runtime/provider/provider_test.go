package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

func f(v float64) *float64 { return &v }

func TestCheckSettings(t *testing.T) {
	all := chat.ModelSettings{Name: "m", MaxTokens: 100, Temperature: f(0.2), TopP: f(0.9), Stop: []string{"END"}}
	tests := []struct {
		name     string
		provider string
		s        chat.ModelSettings
		want     []string // Error() of each *SettingError, in order
	}{
		{"anthropic takes max_tokens and stop", Anthropic, chat.ModelSettings{Name: "m", MaxTokens: 10, Stop: []string{"a", "b", "c", "d", "e"}}, nil},
		{"anthropic refuses temperature and top_p", Anthropic, all, []string{
			"provider anthropic does not accept model.temperature: the Anthropic Messages API (anthropic-sdk-go v2.15.0) has no temperature parameter; remove it",
			"provider anthropic does not accept model.top_p: the Anthropic Messages API (anthropic-sdk-go v2.15.0) has no top_p parameter; remove it",
		}},
		{"chat takes everything", OpenAI, all, nil},
		{"chat takes four stop sequences", OpenAI, chat.ModelSettings{Stop: []string{"a", "b", "c", "d"}}, nil},
		{"chat refuses a fifth stop sequence", OpenAI, chat.ModelSettings{Stop: []string{"a", "b", "c", "d", "e"}}, []string{
			"provider openai does not accept model.stop: the Chat Completions API takes at most 4 stop sequences, this has 5; remove 1",
		}},
		{"responses takes sampling", OpenAIResponses, chat.ModelSettings{Temperature: f(1), TopP: f(1), MaxTokens: 500}, nil},
		{"responses refuses stop", OpenAIResponses, all, []string{
			"provider openai-responses does not accept model.stop: the Responses API has no stop sequences; remove model.stop, or use provider openai (Chat Completions)",
		}},
		{"responses takes max_tokens from 16", OpenAIResponses, chat.ModelSettings{MaxTokens: 16}, nil},
		{"responses refuses max_tokens below 16", OpenAIResponses, chat.ModelSettings{MaxTokens: 15}, []string{
			"provider openai-responses does not accept model.max_tokens: the Responses API takes max_output_tokens of at least 16, this is 15; raise it",
		}},
		{"extra passes other keys", Anthropic, chat.ModelSettings{Extra: map[string]any{"thinking": map[string]any{"type": "enabled"}, "metadata": 1}}, nil},
		{"extra may not set managed fields, sorted", Anthropic, chat.ModelSettings{Extra: map[string]any{"top_k": 5, "max_tokens": 9, "thinking": 1}}, []string{
			"provider anthropic does not accept model.extra.max_tokens: set model.max_tokens instead (model.extra may not set a field the adapter fills)",
			"provider anthropic does not accept model.extra.top_k: the Anthropic Messages API (anthropic-sdk-go v2.15.0) has no top_k parameter; remove it (model.extra may not set a field the adapter fills)",
		}},
		{"chat extra max_tokens is deprecated", OpenAI, chat.ModelSettings{Extra: map[string]any{"max_tokens": 9, "seed": 1}}, []string{
			"provider openai does not accept model.extra.max_tokens: set model.max_tokens instead (sent as max_completion_tokens; max_tokens is deprecated) (model.extra may not set a field the adapter fills)",
		}},
		{"responses extra store is the opt-in", OpenAIResponses, chat.ModelSettings{Extra: map[string]any{"store": true, "include": []any{}}}, []string{
			`provider openai-responses does not accept model.extra.include: the adapter sets include to ["reasoning.encrypted_content"] itself (model.extra may not set a field the adapter fills)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSettings(tt.provider, tt.s)
			got := SettingErrors(err)
			if len(got) != len(tt.want) || (err == nil) != (len(tt.want) == 0) {
				t.Fatalf("got %v, want %d errors %q", err, len(tt.want), tt.want)
			}
			for i, se := range got {
				if se.Error() != tt.want[i] || se.Provider != tt.provider {
					t.Errorf("error %d = %q\nwant      %q", i, se.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestCheckSettingsUnknownProvider(t *testing.T) {
	err := CheckSettings("gemini", chat.ModelSettings{})
	if !errors.Is(err, ErrUnknownProvider) || err.Error() != `unknown model provider "gemini": use anthropic, openai or openai-responses` {
		t.Errorf("err = %v", err)
	}
}

func TestCheckForRefusesAnotherProvidersSettings(t *testing.T) {
	if err := CheckFor(Anthropic, chat.ModelSettings{Provider: Anthropic, Stop: []string{"x"}}); err != nil {
		t.Errorf("own provider: %v", err)
	}
	if err := CheckFor(Anthropic, chat.ModelSettings{}); err != nil {
		t.Errorf("no provider named: %v", err)
	}
	err := CheckFor(Anthropic, chat.ModelSettings{Provider: OpenAI})
	if err == nil || !strings.Contains(err.Error(), "written for provider openai, but this is the anthropic adapter") {
		t.Errorf("err = %v", err)
	}
	if err := CheckFor(OpenAI, chat.ModelSettings{Provider: "x"}); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("err = %v", err)
	}
	// The same *SettingError, with the same text, as CheckSettings.
	err = CheckFor(Anthropic, chat.ModelSettings{Temperature: f(0)})
	if se := SettingErrors(err); len(se) != 1 || se[0].Setting != "temperature" {
		t.Errorf("err = %v", err)
	}
}
