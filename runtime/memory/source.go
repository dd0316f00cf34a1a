package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// ErrDuplicateMessage is returned (wrapped) by AppendMessage for a MessageID the Source already
// holds, as the SQL store's unique message_id does.
var ErrDuplicateMessage = errors.New("memory: duplicate message id")

// ErrUnknownMessage is returned (wrapped) by RecordToolUses for a message seq the Source does
// not hold.
var ErrUnknownMessage = errors.New("memory: unknown message")

// ErrInvalid is returned (wrapped) for an empty thread id or message id, or a compaction with an
// empty thread or a boundary that is not positive.
var ErrInvalid = errors.New("memory: invalid value")

// Source is an in-memory [history.Source]. The zero value is empty and ready to use; a Source
// is safe for concurrent use and must not be copied after first use. Its methods never block
// and ignore their context.
//
// Seq values are assigned by the Source from one counter per Source, starting at 1, in the
// order AppendMessage and RecordToolUses are called, as the SQL store's auto-increment keys
// are; so the same calls in the same order always give the same Seqs and the same replay.
type Source struct {
	mu          sync.Mutex
	seq         int64
	messages    []history.Message // in Seq order
	byID        map[string]int    // message id -> index in messages
	bySeq       map[int64]int     // message seq -> index in messages
	compactions map[string][]history.Compaction
}

// New returns an empty Source.
func New() *Source { return &Source{} }

// AppendMessage stores m as the newest message of m.ThreadID and returns its Seq; m.ToolUses,
// if any, are recorded after it, as RecordToolUses would. It copies m and everything m points
// to, except attachment Data, which it drops (a source keeps metadata only); the Seqs in m are
// ignored and assigned anew, and Date is kept in UTC truncated to the microsecond (what a
// DATETIME(6) column holds). It returns an error wrapping ErrInvalid for an empty ThreadID or
// MessageID, and ErrDuplicateMessage when the MessageID is already stored (in any thread).
func (s *Source) AppendMessage(_ context.Context, m history.Message) (int64, error) {
	if m.ThreadID == "" || m.MessageID == "" {
		return 0, fmt.Errorf("%w: thread id %q, message id %q", ErrInvalid, m.ThreadID, m.MessageID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[m.MessageID]; dup {
		return 0, fmt.Errorf("%w: %q", ErrDuplicateMessage, m.MessageID)
	}
	m.References = slices.Clone(m.References)
	m.To = slices.Clone(m.To)
	m.Cc = slices.Clone(m.Cc)
	m.Attachments = slices.Clone(m.Attachments)
	for i := range m.Attachments {
		m.Attachments[i].Data = nil
	}
	m.ToolUses = slices.Clone(m.ToolUses)
	m.Date = m.Date.UTC().Truncate(time.Microsecond)
	s.seq++
	m.Seq = s.seq
	for i := range m.ToolUses {
		s.seq++
		m.ToolUses[i].Seq = s.seq
	}
	if s.byID == nil {
		s.byID = make(map[string]int)
		s.bySeq = make(map[int64]int)
	}
	s.byID[m.MessageID] = len(s.messages)
	s.bySeq[m.Seq] = len(s.messages)
	s.messages = append(s.messages, m)
	return m.Seq, nil
}

// RecordToolUses records uses for the stored message whose Seq is messageSeq (the run that
// answered it), in the given order, assigning each a new Seq after every Seq given so far. A
// use whose HasResult is false stands for a call whose result was never recorded. It returns
// an error wrapping ErrUnknownMessage when no stored message has that Seq.
func (s *Source) RecordToolUses(_ context.Context, messageSeq int64, uses ...history.ToolUse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.bySeq[messageSeq]
	if !ok {
		return fmt.Errorf("%w: seq %d", ErrUnknownMessage, messageSeq)
	}
	for _, u := range uses {
		s.seq++
		u.Seq = s.seq
		s.messages[i].ToolUses = append(s.messages[i].ToolUses, u)
	}
	return nil
}

// SetCompaction stores c as a completed compaction of c.ThreadID, replacing one with the same
// BoundarySeq. It returns an error wrapping ErrInvalid for an empty ThreadID or a BoundarySeq
// below 1.
func (s *Source) SetCompaction(_ context.Context, c history.Compaction) error {
	if c.ThreadID == "" || c.BoundarySeq < 1 {
		return fmt.Errorf("%w: compaction of thread %q at boundary %d", ErrInvalid, c.ThreadID, c.BoundarySeq)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compactions == nil {
		s.compactions = make(map[string][]history.Compaction)
	}
	list := s.compactions[c.ThreadID]
	for i := range list {
		if list[i].BoundarySeq == c.BoundarySeq {
			list[i] = c
			return nil
		}
	}
	s.compactions[c.ThreadID] = append(list, c)
	return nil
}

// LatestCompaction implements [history.Source]: a copy of the thread's compaction with the
// greatest BoundarySeq, or (nil, nil) when it has none. It never fails.
func (s *Source) LatestCompaction(_ context.Context, threadID string) (*history.Compaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *history.Compaction
	for i, c := range s.compactions[threadID] {
		if best == nil || c.BoundarySeq > best.BoundarySeq {
			best = &s.compactions[threadID][i]
		}
	}
	if best == nil {
		return nil, nil
	}
	c := *best
	return &c, nil
}

// History implements [history.Source]: the window q selects, in the order the messages were
// appended (by Seq), each a copy, with their tool uses in recording order when q.ToolUses is
// set. It fails only for a query that fails [history.Query.Check]; an unknown thread gives an
// empty Window.
func (s *Source) History(_ context.Context, q history.Query) (*history.Window, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("memory: history: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var sel []*history.Message
	for i := range s.messages {
		m := &s.messages[i]
		switch {
		case m.ThreadID != q.ThreadID,
			q.ExcludeMessageID != "" && m.MessageID == q.ExcludeMessageID,
			m.Seq <= q.AfterSeq,
			q.UpToSeq > 0 && m.Seq > q.UpToSeq,
			q.InboundUpToSeq > 0 && m.Direction != history.Outbound && m.Seq > q.InboundUpToSeq:
			continue
		}
		sel = append(sel, m)
	}
	w := &history.Window{}
	if n, bounded := q.MaxMessages(); bounded && len(sel) > n {
		w.Omitted = len(sel) - n
		sel = sel[w.Omitted:]
	}
	// One backing array per kind of slice for the whole answer, instead of one per message.
	var nAddr, nAtt, nUse int
	for _, m := range sel {
		nAddr += len(m.References) + len(m.To) + len(m.Cc)
		nAtt += len(m.Attachments)
		if q.ToolUses {
			nUse += len(m.ToolUses)
		}
	}
	addrs := make([]string, 0, nAddr)
	atts := make([]history.Attachment, 0, nAtt)
	uses := make([]history.ToolUse, 0, nUse)
	w.Messages = make([]history.Message, len(sel))
	for i, src := range sel {
		m := *src
		m.References, addrs = carve(addrs, m.References)
		m.To, addrs = carve(addrs, m.To)
		m.Cc, addrs = carve(addrs, m.Cc)
		m.Attachments, atts = carve(atts, m.Attachments)
		if q.ToolUses {
			m.ToolUses, uses = carve(uses, m.ToolUses)
		} else {
			m.ToolUses = nil
		}
		w.Messages[i] = m
	}
	return w, nil
}

// carve appends src to arena and returns the copy, capped at its own length, and the arena;
// a nil src stays nil.
func carve[T any](arena, src []T) ([]T, []T) {
	if src == nil {
		return nil, arena
	}
	start := len(arena)
	arena = append(arena, src...)
	return arena[start:len(arena):len(arena)], arena
}
