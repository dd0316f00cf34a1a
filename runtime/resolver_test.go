package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// emit returns a resolver appending the given messages.
func emit(msgs ...chat.Message) Resolver {
	return ResolverFunc(func(_ context.Context, _ *Invocation, dst []chat.Message) ([]chat.Message, error) {
		return append(dst, msgs...), nil
	})
}

// failAfter returns a resolver that appends its messages (writing into dst's spare capacity)
// and then fails, as a misbehaving resolver might.
func failAfter(err error, msgs ...chat.Message) Resolver {
	return ResolverFunc(func(_ context.Context, _ *Invocation, dst []chat.Message) ([]chat.Message, error) {
		return append(dst, msgs...), err
	})
}

func TestChainConcatenatesInDeclarationOrder(t *testing.T) {
	inner := NewChain(Step{Kind: "a", Resolver: emit(chat.UserMessage("2"), chat.UserMessage("3"))})
	c := NewChain(
		Step{Kind: "load_text", Resolver: emit(chat.SystemMessage("1"))},
		Step{Kind: "none", Resolver: emit()},
		Step{Kind: "chain", Resolver: inner},
		Step{Kind: "nil chain", Resolver: (*Chain)(nil)},
		Step{Kind: "load_text", Resolver: emit(chat.UserMessage("4"))},
	)
	dst := []chat.Message{chat.SystemMessage("0")}
	got, err := c.Resolve(context.Background(), &Invocation{}, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.Message{chat.SystemMessage("0"), chat.SystemMessage("1"), chat.UserMessage("2"), chat.UserMessage("3"), chat.UserMessage("4")}
	if !equalMessages(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if c.Len() != 5 || len(c.Steps()) != 5 || c.Steps()[0].Kind != "load_text" {
		t.Errorf("Len/Steps = %d/%v", c.Len(), c.Steps())
	}
}

func TestNewChainCopiesSteps(t *testing.T) {
	steps := []Step{{Kind: "a", Resolver: emit(chat.UserMessage("a"))}}
	c := NewChain(steps...)
	steps[0].Resolver = emit(chat.UserMessage("changed"))
	got, _ := c.Resolve(context.Background(), nil, nil)
	if !equalMessages(got, []chat.Message{chat.UserMessage("a")}) {
		t.Errorf("chain saw a later change to the caller's slice: %v", got)
	}
	c.Steps()[0].Kind = "mutated"
	if c.Steps()[0].Kind != "a" {
		t.Error("Steps must return a copy")
	}
}

func TestChainErrorNamesStep(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name  string
		chain *Chain
		want  string
		index int
	}{
		{
			"kind and position",
			NewChain(Step{Kind: "load_text", Resolver: emit()}, Step{Kind: "load_file", Pos: "a.persona.yaml:7:5", Resolver: failAfter(cause)}),
			"resolver #2 (load_file at a.persona.yaml:7:5): boom", 1,
		},
		{
			"kind without position",
			NewChain(Step{Kind: "use", Resolver: failAfter(cause)}),
			"resolver #1 (use): boom", 0,
		},
		{
			"no kind",
			NewChain(Step{Resolver: failAfter(cause)}),
			"resolver #1 (resolver): boom", 0,
		},
		{
			"nil resolver",
			NewChain(Step{Kind: "use", Pos: "p.yaml:3:3"}),
			"resolver #1 (use at p.yaml:3:3): step has no resolver", 0,
		},
		{
			"nested chain names both steps",
			NewChain(
				Step{Kind: "load_text", Resolver: emit(chat.UserMessage("x"))},
				Step{Kind: "chain", Pos: "outer.yaml:2:1", Resolver: NewChain(
					Step{Kind: "load_text", Resolver: emit()},
					Step{Kind: "load_record", Pos: "inner.yaml:9:3", Resolver: failAfter(cause)},
				)},
			),
			"resolver #2 (chain at outer.yaml:2:1): resolver #2 (load_record at inner.yaml:9:3): boom", 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.chain.Resolve(context.Background(), &Invocation{}, nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
			var se *StepError
			if !errors.As(err, &se) || se.Index != tt.index {
				t.Fatalf("errors.As StepError: %#v", se)
			}
			if tt.name != "nil resolver" && !errors.Is(err, cause) {
				t.Error("the resolver's error must be reachable with errors.Is")
			}
		})
	}
}

func TestChainTruncatesDstOnError(t *testing.T) {
	c := NewChain(
		Step{Kind: "ok", Resolver: emit(chat.UserMessage("a"), chat.UserMessage("b"))},
		Step{Kind: "bad", Resolver: failAfter(errors.New("x"), chat.UserMessage("partial"))},
	)
	for _, capacity := range []int{1, 2, 64} { // growing and in-place appends
		dst := make([]chat.Message, 1, capacity)
		dst[0] = chat.SystemMessage("kept")
		got, err := c.Resolve(context.Background(), &Invocation{}, dst)
		if err == nil {
			t.Fatal("want error")
		}
		if !equalMessages(got, []chat.Message{chat.SystemMessage("kept")}) {
			t.Errorf("cap %d: got %v, want dst as it was", capacity, got)
		}
	}
}

func TestChainStopsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	c := NewChain(
		Step{Kind: "first", Resolver: ResolverFunc(func(_ context.Context, _ *Invocation, dst []chat.Message) ([]chat.Message, error) {
			ran++
			cancel()
			return append(dst, chat.UserMessage("1")), nil
		})},
		Step{Kind: "second", Pos: "s.yaml:4:3", Resolver: ResolverFunc(func(_ context.Context, _ *Invocation, dst []chat.Message) ([]chat.Message, error) {
			ran++
			return dst, nil
		})},
	)
	got, err := c.Resolve(ctx, &Invocation{}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if err.Error() != "resolver #2 (second at s.yaml:4:3): context canceled" {
		t.Errorf("err = %q", err)
	}
	if ran != 1 || len(got) != 0 {
		t.Errorf("ran %d steps and returned %v; want 1 step and no messages", ran, got)
	}
}

func TestChainIsSafeForConcurrentUse(t *testing.T) {
	c := NewChain(
		Step{Kind: "a", Resolver: emit(chat.SystemMessage("s"))},
		Step{Kind: "b", Resolver: emit(chat.UserMessage("1"), chat.UserMessage("2"))},
	)
	want := []chat.Message{chat.SystemMessage("s"), chat.UserMessage("1"), chat.UserMessage("2")}
	done := make(chan []chat.Message)
	for range 8 {
		go func() {
			got, _ := c.Resolve(context.Background(), &Invocation{}, nil)
			done <- got
		}()
	}
	for range 8 {
		if got := <-done; !equalMessages(got, want) {
			t.Errorf("got %v", got)
		}
	}
	if c.sizeHint() != 3 {
		t.Errorf("size hint %d, want 3", c.sizeHint())
	}
}
