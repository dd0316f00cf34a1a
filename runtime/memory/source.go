package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
)

// ErrDuplicateMessage is returned (wrapped) by AddMessage for a MessageID the Source already
// holds, as the SQL store's unique message_id does.
var ErrDuplicateMessage = errors.New("memory: duplicate message id")

// ErrUnknownMessage is returned (wrapped) by AddToolUses for a MessageID the Source does not hold.
var ErrUnknownMessage = errors.New("memory: unknown message id")

// ErrInvalid is returned (wrapped) for an empty thread id or message id, or a compaction with an
// empty thread or a boundary that is not positive.
var ErrInvalid = errors.New("memory: invalid value")

// Source is an in-memory runtime.HistorySource. The zero value is empty and ready to use; a
// Source is safe for concurrent use and must not be copied after first use.
//
// Seq values are assigned by the Source from one counter per Source, starting at 1, in the
// order AddMessage and AddToolUses are called, as the SQL store's auto-increment keys are; so
// the same calls in the same order always give the same Seqs and the same replay.
type Source struct {
	mu          sync.Mutex
	seq         int64
	messages    []message
	byID        map[string]int // message id -> index in messages
	compactions map[string][]runtime.Compaction
}

type message struct {
	thread string
	m      runtime.StoredMessage
}

// New returns an empty Source.
func New() *Source { return &Source{} }

// AddMessage stores m as the next message of threadID and returns its Seq. It copies m and
// everything m points to; m.Seq and the Seqs of m.ToolUses are ignored and assigned anew (the
// message first, then its tool uses in the given order), SentAt is kept in UTC truncated to the
// microsecond (what a DATETIME(6) column holds), and attachment Data is dropped (a source holds
// metadata only). It returns an error wrapping ErrInvalid for an empty threadID or MessageID,
// and ErrDuplicateMessage when the MessageID is already stored.
func (s *Source) AddMessage(threadID string, m runtime.StoredMessage) (int64, error) {
	if threadID == "" || m.MessageID == "" {
		return 0, fmt.Errorf("%w: thread id %q, message id %q", ErrInvalid, threadID, m.MessageID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[m.MessageID]; dup {
		return 0, fmt.Errorf("%w: %q", ErrDuplicateMessage, m.MessageID)
	}
	c := copyMessage(m, true)
	c.SentAt = c.SentAt.UTC().Truncate(time.Microsecond)
	s.seq++
	c.Seq = s.seq
	for i := range c.ToolUses {
		s.seq++
		c.ToolUses[i].Seq = s.seq
	}
	if s.byID == nil {
		s.byID = make(map[string]int)
	}
	s.byID[m.MessageID] = len(s.messages)
	s.messages = append(s.messages, message{thread: threadID, m: c})
	return c.Seq, nil
}

// AddToolUses records uses for the stored message messageID (the run that answered it), in the
// given order, assigning each a new Seq after every Seq given so far. A use whose HasResult is
// false stands for a call whose result was never recorded. It returns an error wrapping
// ErrUnknownMessage when messageID is not stored.
func (s *Source) AddToolUses(messageID string, uses ...runtime.ToolUse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.byID[messageID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownMessage, messageID)
	}
	for _, u := range uses {
		s.seq++
		u.Seq = s.seq
		s.messages[i].m.ToolUses = append(s.messages[i].m.ToolUses, u)
	}
	return nil
}

// SetCompaction stores c as a completed compaction of c.ThreadID, replacing one with the same
// BoundarySeq. It returns an error wrapping ErrInvalid for an empty ThreadID or a BoundarySeq
// below 1.
func (s *Source) SetCompaction(c runtime.Compaction) error {
	if c.ThreadID == "" || c.BoundarySeq < 1 {
		return fmt.Errorf("%w: compaction of thread %q at boundary %d", ErrInvalid, c.ThreadID, c.BoundarySeq)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compactions == nil {
		s.compactions = make(map[string][]runtime.Compaction)
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

// LatestCompaction returns a copy of the thread's compaction with the greatest BoundarySeq, or
// (nil, nil) when it has none. It never fails.
func (s *Source) LatestCompaction(_ context.Context, threadID string) (*runtime.Compaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *runtime.Compaction
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

// History returns the messages q selects in the order they were added (by Seq), each a copy, with
// their tool uses (sorted by runtime.SortToolUses) when q.ToolUses is set, and Omitted as
// runtime.History defines it. It never fails; an unknown thread gives an empty History.
func (s *Source) History(_ context.Context, q runtime.HistoryQuery) (*runtime.History, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sel []*runtime.StoredMessage
	for i := range s.messages {
		e := &s.messages[i]
		switch {
		case e.thread != q.ThreadID,
			q.ExcludeMessageID != "" && e.m.MessageID == q.ExcludeMessageID,
			e.m.Seq <= q.AfterSeq,
			q.UpToSeq > 0 && e.m.Seq > q.UpToSeq:
			continue
		}
		sel = append(sel, &e.m)
	}
	// s.messages is in Seq order already: the order of record is the replay order.
	h := &runtime.History{}
	if q.Limit > 0 && len(sel) > q.Limit {
		h.Omitted = len(sel) - q.Limit
		sel = sel[h.Omitted:]
	}
	// One backing array per kind of slice for the whole answer, instead of one per message.
	var nAddr, nAtt, nUse int
	for _, m := range sel {
		nAddr += len(m.To) + len(m.Cc)
		nAtt += len(m.Attachments)
		if q.ToolUses {
			nUse += len(m.ToolUses)
		}
	}
	addrs := make([]string, 0, nAddr)
	atts := make([]runtime.Attachment, 0, nAtt)
	uses := make([]runtime.ToolUse, 0, nUse)
	h.Messages = make([]runtime.StoredMessage, len(sel))
	for i, src := range sel {
		m := *src
		m.To, addrs = carve(addrs, m.To)
		m.Cc, addrs = carve(addrs, m.Cc)
		m.Attachments, atts = carve(atts, m.Attachments)
		for k := range m.Attachments {
			m.Attachments[k].Data = nil
		}
		if q.ToolUses {
			m.ToolUses, uses = carve(uses, m.ToolUses)
			runtime.SortToolUses(m.ToolUses)
		} else {
			m.ToolUses = nil
		}
		h.Messages[i] = m
	}
	return h, nil
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

// copyMessage returns m with its slices copied (tool uses only when withUses) and attachment
// Data dropped.
func copyMessage(m runtime.StoredMessage, withUses bool) runtime.StoredMessage {
	m.To = slices.Clone(m.To)
	m.Cc = slices.Clone(m.Cc)
	if m.Attachments != nil {
		atts := make([]runtime.Attachment, len(m.Attachments))
		for i, a := range m.Attachments {
			a.Data = nil
			atts[i] = a
		}
		m.Attachments = atts
	}
	if withUses {
		m.ToolUses = slices.Clone(m.ToolUses)
	} else {
		m.ToolUses = nil
	}
	return m
}
