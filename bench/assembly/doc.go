// Package assembly benchmarks request assembly: the same request — a system prompt read from a
// file, the sender's account record rendered to text, the 50 earlier messages of the thread with
// 20 tool rounds of 5 calls attached to some of them, and the current user message — built from
// one fixture of stored rows by three pipelines:
//
//   - Personagen: the constructor personagen generated from bench-agent.persona.yaml
//     (internal/persona), run by runtime.BuildRequest with runtime/memory as the history.Source;
//   - LangChainGo: github.com/tmc/langchaingo prompt templates (a ChatPromptTemplate with system
//     templates, a MessagesPlaceholder and a human template) fed by a memory.ChatMessageHistory;
//   - Eino: github.com/cloudwego/eino's prompt.FromMessages with a schema.MessagesPlaceholder fed
//     by []*schema.Message.
//
// Every side does the same work per request: it reads the prompt bytes from the same fstest.MapFS,
// calls the same host loader and serializer for the record, renders each stored message as the
// header block and body personagen's runtime.ThreadHistory writes, turns each tool round into one
// assistant message with its calls and one tool message per result clipped to 4,000 characters,
// and wraps stored arguments that are not a JSON object. The peers' row conversion (rows.go) is
// written as a careful user of those libraries would write it; TestPipelinesAgree holds that the
// three produce the same messages.
package assembly
