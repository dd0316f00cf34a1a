// Package conversion benchmarks the conversion of an assembled request to each model API's
// SDK parameters, next to the assembly that built it: the 173-message request of the assembly
// benchmark (a system prompt, an account record, 50 replayed messages with 20 tool rounds of 5
// parallel calls, the current message) converted by runtime/provider/anthropic (Params),
// runtime/provider/openai (ChatParams, ResponsesParams).
//
// BenchmarkSend compares one whole model call — conversion, the SDK's JSON encoding, the
// client's request and response handling, decoding the answer — of personagen's adapters with
// langchaingo's Anthropic and OpenAI model packages (llms/anthropic, llms/openai) on the same
// messages, each client given an in-process HTTP client that answers a fixed short reply, so no
// network is timed. langchaingo carries the messages, but not every tool round: its Anthropic
// package keeps only the first call of an assistant message (a round of five parallel calls
// goes out as one tool_use) and sends every result as its own user message, which the Messages
// API refuses ("tool_use ids were found without tool_result blocks immediately after"), and it
// folds every system message into one top-level prompt; its OpenAI package carries the rounds.
// eino-ext's Claude model package is not served by the module proxy this project uses, so eino
// has no row.
package conversion
