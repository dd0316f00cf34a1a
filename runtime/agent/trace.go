package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/tool"
)

// instrumentation is the name of the runner's tracer.
const instrumentation = "github.com/personagen/personagen/runtime/agent"

// Attributes of personagen's own, beside the GenAI conventions'.
const (
	attrRunKey      = attribute.Key("personagen.run.key")
	attrRunKind     = attribute.Key("personagen.run.kind")
	attrRunAttempt  = attribute.Key("personagen.run.attempt")
	attrRunStatus   = attribute.Key("personagen.run.status")
	attrRunReplayed = attribute.Key("personagen.run.replayed_rounds")
	attrRunInDoubt  = attribute.Key("personagen.run.in_doubt_calls")
	attrIdempotent  = attribute.Key("personagen.tool.idempotent")
)

func (r *Runner) tracer() trace.Tracer {
	tp := r.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// providerName is the gen_ai.provider.name of a persona's provider setting ("" for none).
func providerName(p string) string {
	switch p {
	case provider.Anthropic:
		return "anthropic"
	case provider.OpenAI, provider.OpenAIResponses:
		return "openai"
	}
	return p
}

// errorType is the low-cardinality error.type of err: a run's failure class (RunError), else
// the kind of a model or tool call's error.
func errorType(err error) string {
	var re *RunError
	if errors.As(err, &re) {
		return string(re.Class)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, chat.ErrContextWindow):
		return "context_window_exceeded"
	case errors.Is(err, tool.ErrInvalidInput):
		return "invalid_input"
	case errors.Is(err, errToolPanicked):
		return "panic"
	case errors.Is(err, ErrMaxTurns):
		return "max_turns"
	case errors.Is(err, ErrNoAnswer):
		return "no_answer"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

func fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
}

// runSpan starts the run's invoke_agent span; end ends it with the run's outcome.
func (a *attempt) runSpan(ctx context.Context) (context.Context, func(*Result, error)) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(a.p.Name),
		attrRunKey.String(a.key),
	}
	if a.p.Description != "" {
		attrs = append(attrs, semconv.GenAIAgentDescription(a.p.Description))
	}
	if name := providerName(a.p.Model.Provider); name != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(name))
	}
	if a.p.Model.Name != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(a.p.Model.Name))
	}
	if a.inbound != nil {
		attrs = append(attrs, attrRunKind.String("reply"), semconv.GenAIConversationID(a.inbound.ThreadID))
	} else {
		attrs = append(attrs, attrRunKind.String("scheduled"))
	}
	ctx, span := a.tracer.Start(ctx, "invoke_agent "+a.p.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	return ctx, func(res *Result, err error) {
		if res != nil {
			u := res.Usage
			span.SetAttributes(
				attrRunAttempt.Int(res.Run.Attempt), attrRunStatus.String(string(res.Run.Status)),
				attrRunReplayed.Int(res.Replayed), attrRunInDoubt.Int(res.InDoubt),
				semconv.GenAIUsageInputTokens(int(u.InputTokens)), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
				semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadTokens)),
				semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWriteTokens)))
			if res.StopReason != "" {
				span.SetAttributes(semconv.GenAIResponseFinishReasons(string(res.StopReason)))
			}
		}
		if err != nil {
			fail(span, err)
		}
		span.End()
	}
}

// chat sends req to the model in a chat span (unless Runner.NoChatSpans).
func (a *attempt) chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if a.r.NoChatSpans {
		return a.r.Model.Generate(ctx, req)
	}
	m := req.Model
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat}
	if name := providerName(m.Provider); name != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(name))
	}
	if m.Name != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(m.Name))
	}
	if m.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(m.MaxTokens))
	}
	if m.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*m.Temperature))
	}
	if m.TopP != nil {
		attrs = append(attrs, semconv.GenAIRequestTopP(*m.TopP))
	}
	if len(m.Stop) > 0 {
		attrs = append(attrs, semconv.GenAIRequestStopSequences(m.Stop...))
	}
	if a.inbound != nil {
		attrs = append(attrs, semconv.GenAIConversationID(a.inbound.ThreadID))
	}
	ctx, span := a.tracer.Start(ctx, "chat "+m.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := a.r.Model.Generate(ctx, req)
	if err != nil {
		fail(span, err)
		return nil, err
	}
	u := resp.Usage
	span.SetAttributes(
		semconv.GenAIResponseFinishReasons(string(resp.StopReason)),
		semconv.GenAIUsageInputTokens(int(u.InputTokens)), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadTokens)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWriteTokens)))
	if resp.Model != "" {
		span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
	}
	if resp.ResponseID != "" {
		span.SetAttributes(semconv.GenAIResponseID(resp.ResponseID))
	}
	return resp, nil
}

// toolSpan starts the execute_tool span of call c; end ends it with the call's error. Its
// attributes are built only for a span that records (a no-op tracer's costs nothing per call).
func (a *attempt) toolSpan(ctx context.Context, tl runtime.Tool, c chat.ToolCall) (context.Context, func(error)) {
	ctx, span := a.tracer.Start(ctx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(c.Name),
			semconv.GenAIToolType("function"),
			attrIdempotent.Bool(tl.Idempotent()),
		)
		if c.ID != "" {
			span.SetAttributes(semconv.GenAIToolCallID(c.ID))
		}
		if d := tl.Description(); d != "" {
			span.SetAttributes(semconv.GenAIToolDescription(d))
		}
	}
	return ctx, func(err error) {
		if err != nil {
			fail(span, err)
		}
		span.End()
	}
}
