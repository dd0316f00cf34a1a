package main

import (
	"context"
	"fmt"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/fakeapi"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// fakeRun is -fake: a cache-honest fake of one API and the real adapter over it.
type fakeRun struct {
	srv     *fakeapi.Server
	adapter chat.Model
}

func newFakeRun(api string) (*fakeRun, error) {
	f := &fakeRun{}
	switch api {
	case provider.Anthropic:
		f.srv = fakeapi.New(fakeapi.Anthropic)
		f.adapter = anthropic.New(anthropicsdk.WithoutEnvironmentDefaults(), anthropicsdk.WithBaseURL(f.srv.URL), anthropicsdk.WithAPIKey("demo"), anthropicsdk.WithMaxRetries(0))
	case provider.OpenAI:
		f.srv = fakeapi.New(fakeapi.OpenAI)
		f.adapter = openai.NewChat(openaisdk.WithBaseURL(f.srv.URL+"/v1"), openaisdk.WithAPIKey("demo"), openaisdk.WithMaxRetries(0))
	case provider.OpenAIResponses:
		f.srv = fakeapi.New(fakeapi.OpenAIResponses)
		f.adapter = openai.NewResponses(openaisdk.WithBaseURL(f.srv.URL+"/v1"), openaisdk.WithAPIKey("demo"), openaisdk.WithMaxRetries(0))
	default:
		return nil, fmt.Errorf("-fake -model %q: want anthropic, openai or openai-responses", api)
	}
	return f, nil
}

// through returns a model that asks script for each answer, has the fake return it and sends
// the request through the real adapter: the answer is the script's, the usage the fake's bill.
func (f *fakeRun) through(script chat.Model) chat.Model {
	return chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
		ans, err := script.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		a := fakeapi.Answer{Text: ans.Message.Text}
		for _, c := range ans.Message.ToolCalls {
			a.Calls = append(a.Calls, providertest.Call{ID: c.ID, Name: c.Name, Arguments: string(c.Input)})
		}
		f.srv.Queue(a)
		return f.adapter.Generate(ctx, req)
	})
}
