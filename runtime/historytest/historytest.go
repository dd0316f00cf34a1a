package historytest

import (
	"context"
	"errors"
	"testing"

	"github.com/personagen/personagen/runtime/history"
)

// Writer is how the suite stores its fixtures in the source under test. An implementer adapts
// the source's own write API to it; the suite calls it from the test's goroutine only.
type Writer interface {
	// AppendMessage stores m as the newest message of m.ThreadID and returns the Seq the
	// source gave it. m.Seq and m.ToolUses are empty; every other field is set as the suite
	// wants it read back, except attachment Data, which a source does not keep. A source that
	// cannot store InReplyTo and References returns an error wrapping errors.ErrUnsupported
	// for a message that sets them, and the suite skips the rule that needs them.
	AppendMessage(ctx context.Context, m history.Message) (int64, error)
	// RecordToolUses stores uses as tool uses of the message whose Seq is messageSeq, recorded
	// in the order given, after everything stored so far. uses is one or more whole rounds
	// (uses sharing RunID and TurnIndex), each in Position order from 0; their Seq fields are
	// empty. A source that cannot store a use without a result (HasResult false) returns an
	// error wrapping errors.ErrUnsupported, and the suite skips the rule that needs one.
	RecordToolUses(ctx context.Context, messageSeq int64, uses ...history.ToolUse) error
	// SetCompaction stores c as a completed compaction. The suite calls it with increasing
	// BoundarySeqs per thread; BoundaryMessageID is the boundary message's id.
	SetCompaction(ctx context.Context, c history.Compaction) error
}

// Run runs the conformance suite against src, writing its fixtures with w, and reports every
// broken rule with t.Error in a subtest named for it. A fixture the Writer fails to store
// stops that subtest with t.Fatal.
func Run(t *testing.T, src history.Source, w Writer) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(&fixture{t: t, ctx: t.Context(), src: src, w: w, name: c.name, seqs: map[string]int64{}})
		})
	}
}

// errUnsupported reports whether err says the source cannot store what was asked.
func errUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
