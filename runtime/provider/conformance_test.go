package provider_test

import (
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// TestConformance runs the public conformance suite on the three adapters, with their strict
// servers' rules as Adapter.Check.
func TestConformance(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			pa := strict.Adapter(a.api)
			pa.New = func(baseURL string) chat.Model { return a.build(baseURL, 0, true) }
			pa.NewRetrying = func(baseURL string, maxWait time.Duration) chat.Model { return a.build(baseURL, maxWait, false) }
			providertest.Run(t, pa)
		})
	}
}
