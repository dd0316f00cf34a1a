package agent_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/personagen/personagen/runtime/agent"
)

// A run is one invoke_agent span with one chat span per model call and one execute_tool span
// per call that ran, as the OpenTelemetry GenAI conventions name them.
func TestSpansFollowTheGenAIConventions(t *testing.T) {
	d := newDB(t, "sqlite")
	ctx := context.Background()
	st := d.open(t)
	in := seed(t, st)
	rec := tracetest.NewSpanRecorder()
	r := runner(st, &model{}, "w1")
	r.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	res, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
	if err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	count := map[string]int{}
	var root sdktrace.ReadOnlySpan
	for _, s := range spans {
		count[attr(s, "gen_ai.operation.name")]++
		if s.Name() == "invoke_agent support" {
			root = s
		}
	}
	if count["invoke_agent"] != 1 || count["chat"] != 4 || count["execute_tool"] != 9 || len(spans) != 14 {
		t.Fatalf("spans by operation: %v (%d spans)", count, len(spans))
	}
	if root == nil || root.SpanKind() != trace.SpanKindInternal || attr(root, "gen_ai.agent.name") != "support" ||
		attr(root, "gen_ai.conversation.id") != threadID || attr(root, "personagen.run.key") != res.Run.Key ||
		attr(root, "gen_ai.usage.input_tokens") != "4600" || attr(root, "personagen.run.status") != "succeeded" {
		t.Fatalf("invoke_agent span: %v %v", root.Name(), root.Attributes())
	}
	for _, s := range spans {
		if s == root {
			continue
		}
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the run's span", s.Name())
		}
		switch attr(s, "gen_ai.operation.name") {
		case "chat":
			if s.Name() != "chat test-model" || s.SpanKind() != trace.SpanKindClient || attr(s, "gen_ai.request.model") != "test-model" ||
				attr(s, "gen_ai.response.model") != "test-model-1" || attr(s, "gen_ai.usage.output_tokens") == "" ||
				attr(s, "gen_ai.request.max_tokens") != "1024" {
				t.Errorf("chat span: %s %v", s.Name(), s.Attributes())
			}
		case "execute_tool":
			name := attr(s, "gen_ai.tool.name")
			if s.Name() != "execute_tool "+name || attr(s, "gen_ai.tool.call.id") == "" || attr(s, "gen_ai.tool.type") != "function" ||
				attr(s, "personagen.tool.idempotent") != map[string]string{"act": "false", "lookup": "true", "search": "true"}[name] {
				t.Errorf("execute_tool span: %s %v", s.Name(), s.Attributes())
			}
		}
	}
	// Without NoChatSpans a model that emits its own chat span would be counted twice: the
	// option leaves the runner's out.
	rec2 := tracetest.NewSpanRecorder()
	r2 := runner(st, &model{}, "w1")
	r2.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec2))
	r2.NoChatSpans = true
	if _, err := r2.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: seedLate(t, st, "m6@example.com")}); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec2.Ended() {
		if attr(s, "gen_ai.operation.name") == "chat" {
			t.Errorf("a chat span with NoChatSpans: %s", s.Name())
		}
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.Emit()
		}
	}
	return ""
}
