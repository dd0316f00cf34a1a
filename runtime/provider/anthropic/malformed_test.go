package anthropic

import (
	"context"
	"errors"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
)

// TestMalformedAnswerIsAnError sends a request for every 200 answer that is not a Messages API
// message: each is an error matching provider.ErrMalformedResponse that names the API and shows
// the start of the body; none panics and none becomes a Response.
func TestMalformedAnswerIsAnError(t *testing.T) {
	for name, rep := range strict.Malformed(strict.Anthropic) {
		t.Run(name, func(t *testing.T) {
			m, srv := newModel(t)
			srv.Queue(rep)
			r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "c"}, Messages: []chat.Message{chat.UserMessage("hi")}})
			strict.CheckMalformed(t, r, err, rep.Body, provider.Anthropic, "not a Messages API message")
		})
	}
}

// TestMappingRefusesAZeroAnswer holds that Response, given a message a host decoded itself,
// refuses nil and a zero message instead of panicking or answering nothing.
func TestMappingRefusesAZeroAnswer(t *testing.T) {
	for name, msg := range map[string]*sdk.Message{"nil": nil, "zero": {}} {
		if r, err := Response(msg); !errors.Is(err, provider.ErrMalformedResponse) || r != nil {
			t.Errorf("%s: Response = %v, %v; want provider.ErrMalformedResponse", name, r, err)
		}
	}
}
