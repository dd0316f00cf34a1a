package anthropic

import (
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// TestConformance runs the public conformance suite with the strict server's rules as
// Adapter.Check.
func TestConformance(t *testing.T) {
	a := strict.Adapter(strict.Anthropic)
	opts := func(baseURL string) []option.RequestOption {
		return []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(baseURL), option.WithAPIKey("test-key")}
	}
	a.New = func(baseURL string) chat.Model { return New(append(opts(baseURL), option.WithMaxRetries(0))...) }
	a.NewRetrying = func(baseURL string, maxWait time.Duration) chat.Model {
		m := New(opts(baseURL)...)
		m.MaxRetryWait = maxWait
		return m
	}
	providertest.Run(t, a)
}
