package openai

import (
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// TestConformance runs the public conformance suite on both adapters, with their strict
// servers' rules as Adapter.Check.
func TestConformance(t *testing.T) {
	clearEnv(t)
	opts := func(baseURL string) []option.RequestOption {
		return []option.RequestOption{option.WithBaseURL(baseURL + "/v1"), option.WithAPIKey("test-key")}
	}
	t.Run("chat", func(t *testing.T) {
		a := strict.Adapter(strict.Chat)
		a.New = func(baseURL string) chat.Model { return NewChat(append(opts(baseURL), option.WithMaxRetries(0))...) }
		a.NewRetrying = func(baseURL string, maxWait time.Duration) chat.Model {
			m := NewChat(opts(baseURL)...)
			m.MaxRetryWait = maxWait
			return m
		}
		providertest.Run(t, a)
	})
	t.Run("responses", func(t *testing.T) {
		a := strict.Adapter(strict.Responses)
		a.New = func(baseURL string) chat.Model {
			return NewResponses(append(opts(baseURL), option.WithMaxRetries(0))...)
		}
		a.NewRetrying = func(baseURL string, maxWait time.Duration) chat.Model {
			m := NewResponses(opts(baseURL)...)
			m.MaxRetryWait = maxWait
			return m
		}
		providertest.Run(t, a)
	})
}
