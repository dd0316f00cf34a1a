package openai

import (
	"context"
	"errors"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
)

// TestMalformedAnswerIsAnError sends a request for every 200 answer that is not an answer of
// the adapter's API: each is an error matching provider.ErrMalformedResponse that names the
// API and shows the start of the body; none panics and none becomes a Response.
func TestMalformedAnswerIsAnError(t *testing.T) {
	for _, tc := range []struct {
		api        strict.API
		name, what string
		model      func(t *testing.T) (chat.Model, *strict.Server)
	}{
		{strict.Chat, provider.OpenAI, "not a chat completion", func(t *testing.T) (chat.Model, *strict.Server) { return newChat(t) }},
		{strict.Responses, provider.OpenAIResponses, "not a Responses API response", func(t *testing.T) (chat.Model, *strict.Server) { return newResponses(t) }},
	} {
		for name, rep := range strict.Malformed(tc.api) {
			t.Run(tc.api.String()+"/"+name, func(t *testing.T) {
				m, srv := tc.model(t)
				srv.Queue(rep)
				r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}})
				strict.CheckMalformed(t, r, err, rep.Body, tc.name, tc.what)
			})
		}
	}
}

// TestMappingRefusesAZeroAnswer holds that the exported mapping functions, given an answer a
// host decoded itself, refuse nil and empty values instead of panicking or answering nothing.
func TestMappingRefusesAZeroAnswer(t *testing.T) {
	for name, f := range map[string]func() error{
		"chat nil":       func() error { _, err := ChatResponse(nil); return err },
		"chat zero":      func() error { _, err := ChatResponse(new(sdk.ChatCompletion)); return err },
		"responses nil":  func() error { _, err := ResponsesResponse(nil); return err },
		"responses zero": func() error { _, err := ResponsesResponse(new(responses.Response)); return err },
	} {
		if err := f(); !errors.Is(err, provider.ErrMalformedResponse) {
			t.Errorf("%s: err = %v, want provider.ErrMalformedResponse", name, err)
		}
	}
}
