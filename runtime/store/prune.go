package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Retention: Prune deletes old threads, or one customer's, a batch at a time.

// DefaultPruneBatch is how many threads one Prune batch selects when Prune.Batch is 0; a
// batch reads that many rows of the activity index, and each thread is then deleted in a
// transaction of its own, so no statement holds locks long enough to keep a service out.
const DefaultPruneBatch = 100

// addressScanRows is how many messages one statement of an address search reads (a range of
// seqs), so the search holds no read for long whatever the store holds.
const addressScanRows = 5000

// Prune says which threads Prune deletes: those whose last activity (when the store received
// their newest message) is before Before, or, with From, those with a message from or to that
// address (and, when Before is set too, older than it).
type Prune struct {
	// Before is the cut-off; the zero time selects threads of any age (From is then required).
	Before time.Time
	// From is an email address ("ann@cust.example"): only threads with a message whose From,
	// To, Cc or Reply-To holds it, compared case-insensitively, are selected. "" selects all.
	From string
	// Batch is how many threads are selected at a time (0 = DefaultPruneBatch, at most
	// MaxListLimit).
	Batch int
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// By names who prunes (required unless DryRun: a service's name for a scheduled prune, an
	// operator's), Reason why; each deleted thread is recorded as an OperatorAction
	// (ActionDeleteThread) with them.
	By     string
	Reason string
}

// PrunedThread is a thread Prune deleted (or, in a dry run, would delete).
type PrunedThread struct {
	ThreadID     string
	Mailbox      string
	Messages     int64
	LastActivity time.Time
	// AttachmentIDs are the ids of its messages' attachments, whose bytes a host keeps outside
	// the store (runtime/mail's Blobs, keyed by content hash, so another message may share one).
	AttachmentIDs []string
}

// KeptThread is a thread Prune selected and kept, and why.
type KeptThread struct {
	ThreadID string
	Why      string
}

// PruneReport is what Prune did.
type PruneReport struct {
	Deleted []PrunedThread
	Kept    []KeptThread
}

// unfinished is the condition on a runs row (alias r) of a run that keeps its thread from
// being pruned: it has not finished.
const unfinished = "r.status IN ('running', 'waiting')"

// Prune deletes the threads p selects, each with everything derived from it, as DeleteThread
// does (tool uses, compactions, reply runs with their turns, outcomes and events, outbox
// entries, pending work, messages), oldest activity first. A thread with a run that has not
// finished (running, stopped and resumable, or waiting for approval) is kept and reported in Kept. Threads are
// selected Batch at a time through the activity index (thread_activity_last) from the oldest
// on, or, with From, by a search of every message's addresses, addressScanRows messages per
// statement; each thread is deleted in a transaction of its own that first takes the lock an
// append to the thread takes (so a message arriving meanwhile either commits first, and the
// thread is judged again with it, or waits and starts the thread anew), checks the thread
// again, deletes it and records the OperatorAction. A thread deleted by another caller meanwhile
// is skipped. ctx bounds the whole: when it ends, Prune returns what it did so far with ctx's
// error. Attachment bytes are the host's (see PrunedThread.AttachmentIDs).
//
// Errors: ErrInvalid (wrapped) for neither Before nor From, a From that is no address, a bad
// Batch, or an empty By without DryRun; ctx's error; the database's (wrapped), with the report
// of what was done before it.
func (s *Store) Prune(ctx context.Context, p Prune) (PruneReport, error) {
	var rep PruneReport
	batch := p.Batch
	if batch == 0 {
		batch = DefaultPruneBatch
	}
	var address string
	switch {
	case batch < 0 || batch > MaxListLimit:
		return rep, fmt.Errorf("%w: prune: batch %d (want 1 to %d)", ErrInvalid, batch, MaxListLimit)
	case p.Before.IsZero() && p.From == "":
		return rep, fmt.Errorf("%w: prune: no cut-off and no address (set Before, From or both)", ErrInvalid)
	case !p.DryRun:
		if err := checkActor(p.By); err != nil {
			return rep, fmt.Errorf("%w (prune)", err)
		}
	}
	if p.From != "" {
		a, err := mail.ParseAddress(p.From)
		if err != nil {
			return rep, fmt.Errorf("%w: prune: %q is not an email address: %v", ErrInvalid, p.From, err)
		}
		address = strings.ToLower(a.Address)
	}
	if !p.Before.IsZero() {
		if err := checkTime("cut-off", p.Before); err != nil {
			return rep, err
		}
	}
	each := func(ids []string) error {
		for _, id := range ids {
			if err := s.pruneThread(ctx, p, id, &rep); err != nil {
				return err
			}
		}
		return nil
	}
	if address != "" {
		return rep, s.threadsOfAddress(ctx, address, batch, each)
	}
	d := s.dialect
	var after struct {
		at time.Time
		id string
	}
	for {
		cond, args := "a.last_at < ?", []any{d.timeArg(p.Before)}
		if !after.at.IsZero() {
			at := d.timeArg(after.at)
			cond += " AND a.last_at >= ? AND (a.last_at > ? OR a.thread_id > ?)"
			args = append(args, at, at, after.id)
		}
		var rows []struct {
			ThreadID string `db:"thread_id"`
			LastAt   dbTime `db:"last_at"`
		}
		if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT a.thread_id, a.last_at FROM `+d.indexed("thread_activity a", indexThreadActivity)+
			` WHERE `+cond+` ORDER BY a.last_at, a.thread_id LIMIT ?`), append(args, batch)...); err != nil {
			return rep, fmt.Errorf("store: prune: select threads: %w", err)
		}
		if len(rows) == 0 {
			return rep, nil
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ThreadID
		}
		if err := each(ids); err != nil {
			return rep, err
		}
		last := rows[len(rows)-1]
		after.at, after.id = last.LastAt.Time, last.ThreadID
		if len(rows) < batch {
			return rep, nil
		}
	}
}

// threadsOfAddress calls each with the ids of the threads that have a message from or to
// address (lower case), batch ids at a time, in the order their first such message was stored.
func (s *Store) threadsOfAddress(ctx context.Context, address string, batch int, each func([]string) error) error {
	d := s.dialect
	pattern := "%" + strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(address) + "%"
	seen := map[string]bool{}
	var pending []string
	var from int64
	for {
		var top int64
		if err := s.db.GetContext(ctx, &top, `SELECT COALESCE(MAX(seq), 0) FROM messages`); err != nil {
			return fmt.Errorf("store: prune: search addresses: %w", err)
		}
		if from >= top {
			break
		}
		to := from + addressScanRows
		var rows []struct {
			ThreadID   string  `db:"thread_id"`
			Sender     string  `db:"sender"`
			Recipients string  `db:"recipients"`
			Cc         string  `db:"cc"`
			ReplyTo    *string `db:"reply_to"`
		}
		like := func(col string) string { return "LOWER(" + col + ") LIKE ? ESCAPE '!'" }
		if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT thread_id, sender, recipients, cc, reply_to FROM messages
			WHERE seq > ? AND seq <= ? AND (`+like("sender")+` OR `+like("recipients")+` OR `+like("cc")+` OR `+like("COALESCE(reply_to, '')")+`)
			ORDER BY seq`), from, to, pattern, pattern, pattern, pattern); err != nil {
			return fmt.Errorf("store: prune: search addresses: %w", err)
		}
		for _, r := range rows {
			if seen[r.ThreadID] {
				continue
			}
			var lists [3][]string
			for i, text := range []string{r.Recipients, r.Cc, deref(r.ReplyTo)} {
				if text != "" {
					_ = decodeList(text, &lists[i]) // an undecodable list only fails to match
				}
			}
			all := append(append(append([]string{r.Sender}, lists[0]...), lists[1]...), lists[2]...)
			if slices.ContainsFunc(all, func(a string) bool { return sameAddress(a, address) }) {
				seen[r.ThreadID] = true
				pending = append(pending, r.ThreadID)
			}
		}
		for len(pending) >= batch {
			if err := each(pending[:batch]); err != nil {
				return err
			}
			pending = pending[batch:]
		}
		from = to
	}
	if len(pending) > 0 {
		return each(pending)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sameAddress reports whether the header value v ("Ann <ann@cust.example>", or a bare address)
// names address (lower case).
func sameAddress(v, address string) bool {
	if a, err := mail.ParseAddress(v); err == nil {
		return strings.ToLower(a.Address) == address
	}
	return strings.EqualFold(strings.TrimSpace(v), address) || strings.Contains(strings.ToLower(v), "<"+address+">")
}

// pruneThread deletes one selected thread, unless it must be kept, and adds it to rep.
func (s *Store) pruneThread(ctx context.Context, p Prune, threadID string, rep *PruneReport) error {
	d := s.dialect
	var pruned *PrunedThread
	var kept string
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		pruned, kept = nil, ""
		if d == DialectMySQL {
			// The lock an append to the thread takes first (see writeMessage).
			var first []int64
			if err := tx.SelectContext(ctx, &first, `SELECT seq FROM messages
				WHERE seq = (SELECT f.seq FROM messages f WHERE f.thread_start = ?) FOR UPDATE`, threadID); err != nil {
				return err
			}
		}
		var rows []struct {
			Mailbox  string `db:"mailbox"`
			Messages int64  `db:"messages"`
			LastAt   dbTime `db:"last_at"`
			Open     int    `db:"open"`
		}
		if err := tx.SelectContext(ctx, &rows, d.rebind(`SELECT a.mailbox, a.messages, a.last_at,
			(SELECT COUNT(*) FROM runs r WHERE r.thread_id = a.thread_id AND `+unfinished+`) AS open
			FROM thread_activity a WHERE a.thread_id = ?`+d.forUpdate()), threadID); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil // deleted meanwhile
		}
		r := rows[0]
		switch {
		case !p.Before.IsZero() && !r.LastAt.Time.Before(p.Before):
			return nil // active again since it was selected
		case r.Open > 0:
			kept = "a run of it has not finished"
			return nil
		}
		var atts []string
		if err := tx.SelectContext(ctx, &atts, d.rebind(`SELECT attachments FROM messages WHERE thread_id = ? AND attachments IS NOT NULL ORDER BY seq`), threadID); err != nil {
			return err
		}
		pruned = &PrunedThread{ThreadID: threadID, Mailbox: r.Mailbox, Messages: r.Messages, LastActivity: r.LastAt.Time}
		for _, text := range atts {
			list, err := decodeAttachments(sql.NullString{String: text, Valid: true})
			if err != nil {
				return fmt.Errorf("thread %q attachments: %w", threadID, err)
			}
			for _, a := range list {
				if !slices.Contains(pruned.AttachmentIDs, a.ID) {
					pruned.AttachmentIDs = append(pruned.AttachmentIDs, a.ID)
				}
			}
		}
		if p.DryRun {
			return nil
		}
		now, err := s.clock()
		if err != nil {
			return err
		}
		if err := s.deleteThread(ctx, tx, threadID); err != nil {
			return err
		}
		return s.recordAction(ctx, tx, now, p.By, ActionDeleteThread, ThreadTarget(threadID), p.Reason,
			fmt.Sprintf("%d messages of mailbox %q, last activity %s", r.Messages, r.Mailbox, r.LastAt.Time.Format(time.RFC3339Nano)))
	})
	switch {
	case err != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("store: prune: %w", err)
	case err != nil:
		return fmt.Errorf("store: prune thread %q: %w", threadID, err)
	case kept != "":
		rep.Kept = append(rep.Kept, KeptThread{ThreadID: threadID, Why: kept})
	case pruned != nil:
		rep.Deleted = append(rep.Deleted, *pruned)
	}
	return nil
}
