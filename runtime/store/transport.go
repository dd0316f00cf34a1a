package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
)

// MaxBounceStatusChars bounds a bounce's status code (an enhanced status code: at most
// "5.999.999").
const MaxBounceStatusChars = 16

// bounceStatus is the form of an enhanced status code (RFC 3463).
var bounceStatus = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}$`)

// MarkBounced records that the reply of mailbox with the Message-ID messageID could not be
// delivered: status is the report's enhanced status code ("5.1.1"), diagnostic its text (the
// failed recipient and the remote server's reply; clipped to StoredPayloadLimit characters). The
// bounce time is the store's clock. A bounced reply leaves the outbox if it was still in it (a
// crash between the relay's 250 and MarkSent): the report shows the relay had taken it, so it
// is not sent again. marked is false when mailbox holds no reply (a message of
// the outbox) with that id, or when the reply was marked bounced before: the first report stays,
// so a redelivered report changes nothing. It is runtime/mail's BounceStore. One statement.
// Errors: ErrInvalid (wrapped) for a status that is not an enhanced status code, the database's
// (wrapped).
func (s *Store) MarkBounced(ctx context.Context, mailbox, messageID, status, diagnostic string) (marked bool, err error) {
	if !bounceStatus.MatchString(status) {
		return false, fmt.Errorf("%w: bounce of %q: status %q is not an enhanced status code (class.subject.detail)", ErrInvalid, messageID, status)
	}
	now, err := s.clock()
	if err != nil {
		return false, err
	}
	n, err := s.affected(ctx, s.dialect.rebind(`UPDATE mail_outbox SET bounced_at = ?, bounce_status = ?, bounce_diagnostic = ?, available_at = NULL
		WHERE message_seq = (SELECT seq FROM messages WHERE mailbox = ? AND message_id = ?) AND bounced_at IS NULL`),
		s.dialect.timeArg(now), status, clipReason(diagnostic), mailbox, messageID)
	if err != nil {
		return false, fmt.Errorf("store: mark reply %q of %q bounced: %w", messageID, mailbox, err)
	}
	return n == 1, nil
}

// Checkpoint is how far a receiver has read a mailbox it polls: the mailbox's UIDVALIDITY (an
// IMAP mailbox's UIDs are only comparable under one) and the highest UID up to which every
// message was delivered and acknowledged.
type Checkpoint struct {
	UIDValidity uint32
	LastUID     uint32
}

// ReceiverCheckpoint returns the checkpoint stored for receiver (a receiver's name for one
// mailbox it reads, at most MaxNameChars characters), with ok false when there is none. Errors:
// ErrInvalid (wrapped) for a bad name, the database's (wrapped).
func (s *Store) ReceiverCheckpoint(ctx context.Context, receiver string) (c Checkpoint, ok bool, err error) {
	if err := checkKey("receiver", receiver, MaxNameChars); err != nil {
		return c, false, err
	}
	var validity, last int64
	err = s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT uid_validity, last_uid FROM receiver_checkpoints WHERE receiver = ?`), receiver).
		Scan(&validity, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("store: read the checkpoint of %q: %w", receiver, err)
	}
	return Checkpoint{UIDValidity: uint32(validity), LastUID: uint32(last)}, true, nil
}

// SaveReceiverCheckpoint stores c as receiver's checkpoint, replacing the one stored. One
// statement. Errors: ErrInvalid (wrapped) for a bad name, the database's (wrapped).
func (s *Store) SaveReceiverCheckpoint(ctx context.Context, receiver string, c Checkpoint) error {
	if err := checkKey("receiver", receiver, MaxNameChars); err != nil {
		return err
	}
	now, err := s.clock()
	if err != nil {
		return err
	}
	q := s.dialect.upsert("receiver_checkpoints", []string{"receiver", "uid_validity", "last_uid", "updated_at"},
		[]string{"receiver"}, []string{"uid_validity", "last_uid", "updated_at"})
	if _, err := s.exec(ctx, s.dialect.rebind(q), receiver, int64(c.UIDValidity), int64(c.LastUID), s.dialect.timeArg(now)); err != nil {
		return fmt.Errorf("store: save the checkpoint of %q: %w", receiver, err)
	}
	return nil
}
