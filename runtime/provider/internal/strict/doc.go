// Package strict holds test servers that speak the wire format of each model API the adapters
// use — the Anthropic Messages API, the OpenAI Chat Completions API and the OpenAI Responses
// API — and refuse, with the API's own error shape and status, every request that breaks a rule
// the adapters promise to keep: unknown fields, missing required fields, blank text blocks,
// tool calls without their results, results without their calls, call ids of another form or
// length than the adapters send or repeated within the request, role order, media types,
// tool definitions, settings. They are stricter than the real APIs where an adapter rule is
// stricter (no consecutive turns of one role, a user turn first, no deprecated fields).
//
// Check* run the same rules on a request body without HTTP (for fuzz targets). Adapter describes
// an API to runtime/provider/providertest — its answers rendered from a providertest.Answer, its
// error shape, its context-window refusal, its request-id header, and the rules as
// Adapter.Check — so that the adapters run the public conformance suite against these rules;
// New starts a providertest.Server of that Adapter, which runs the rules and answers with queued
// replies, for tests that drive the real SDK clients. Malformed lists, per API, success answers
// that are not a message of it, which every adapter must refuse.
package strict
