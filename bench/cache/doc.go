// Package cache measures what prompt caching saves on a support thread: the example support
// persona (examples/support-agent.persona.yaml, generated into generated/) answers a thread of
// ten customer messages one by one — each run one or two tool rounds, then the reply, all
// through the runner (runtime/agent) on an in-memory SQLite store — with the real Anthropic and
// OpenAI adapters talking to the cache-honest fake APIs (runtime/provider/fakeapi), which bill
// every call as the provider's prompt cache would. It reports the share of input tokens read
// from the cache from the second call on and the billed input cost at the providers'
// multipliers (Anthropic: reads 0.1×, 5-minute writes 1.25×), against the same persona with its
// cache plan off (cache.ttl none; the uncached cost is its input tokens at the full price) and against langchaingo's llms/anthropic sending the same
// conversations (it joins every system message into one system string and marks nothing, so
// nothing of its requests is cacheable). A second measurement runs a thread longer than the
// history window (limit 10, 30 messages) with the window sliding one message at a time and
// advancing in steps of 5.
//
//	go test ./cache/                            # the targets, as a test
//	go test -run '^$' -bench Cache ./cache/     # the figures, as benchmark metrics
package cache
