package store

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The store's limits: one per field, checked in Go before anything is written, so MySQL and
// SQLite (which does not enforce column sizes) refuse the same values with the same ErrInvalid
// naming the field. Keys are counted in characters (Unicode code points), as MySQL's VARCHAR
// columns count them; text is counted in bytes of UTF-8, as its TEXT columns count them. Every
// column holds its limit (VARCHAR(191) and VARCHAR(255) keys, TEXT for the short texts, MEDIUMTEXT
// for bodies, lists, attachment metadata and summaries), and the largest message the limits
// allow, with every byte escaped, is written in statements that each stay under MariaDB's
// default 16 MiB max_allowed_packet.
const (
	// MaxThreadIDChars bounds a thread id.
	MaxThreadIDChars = 191
	// MaxMessageIDChars bounds a message id.
	MaxMessageIDChars = 255
	// MaxNameChars bounds a persona, a responsibility, a run key, a lease holder, a round's run
	// id and a run's stop reason.
	MaxNameChars = 191
	// MaxToolFieldChars bounds a tool call id and a tool name.
	MaxToolFieldChars = 255
	// MaxContentTypeChars bounds an attachment's content type.
	MaxContentTypeChars = 255
	// MaxAddressBytes bounds a message's sender and each entry of To, Cc and ReplyTo (998 is the
	// longest line RFC 5322 allows).
	MaxAddressBytes = 998
	// MaxAddresses bounds the entries of To, of Cc and of ReplyTo, each.
	MaxAddresses = 200
	// MaxSubjectBytes bounds a message's subject.
	MaxSubjectBytes = 16 << 10
	// MaxBodyBytes bounds a message's text body and its HTML body, each, and a compaction's
	// summary.
	MaxBodyBytes = 2 << 20
	// MaxAttachments bounds the attachments of one message.
	MaxAttachments = 500
	// MaxFilenameBytes bounds an attachment's filename.
	MaxFilenameBytes = 998
	// MaxAttachmentIDBytes bounds an attachment's id.
	MaxAttachmentIDBytes = 998
	// MaxReferences bounds the entries of a message's References (each at most
	// MaxMessageIDChars, as is its InReplyTo).
	MaxReferences = 500
	// MaxNoteBytes bounds a message's not-to-answer reason and each of its problems.
	MaxNoteBytes = 998
	// MaxSubjectKeyChars bounds a message's subject key (Message.SubjectKey: printable ASCII
	// without spaces; runtime/mail's keys have 32).
	MaxSubjectKeyChars = 32
	// MaxProblems bounds the problems recorded with one message.
	MaxProblems = 100
	// MaxRoundTextBytes bounds a round's assistant text (Round.Text).
	MaxRoundTextBytes = 256 << 10
	// MaxRoundStateBytes bounds the JSON of a round's provider state (Round.State).
	MaxRoundStateBytes = 1 << 20
)

// checkKey rejects an empty key, one ending in a space, one longer than max characters, or one
// that is not UTF-8. A trailing space is refused because MySQL's PAD SPACE collations (such as
// MariaDB's utf8mb4_bin) compare "a " equal to "a" while SQLite does not: both dialects must
// treat keys alike.
func checkKey(field, v string, max int) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	}
	if strings.HasSuffix(v, " ") {
		return fmt.Errorf("%w: %s %q ends with a space", ErrInvalid, field, v)
	}
	return checkLen(field, v, max)
}

// isKeyText reports whether v is printable ASCII without spaces.
func isKeyText(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

// checkLen rejects a value longer than max characters or not valid UTF-8.
func checkLen(field, v string, max int) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, field, v)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Errorf("%w: %s has %d characters (at most %d)", ErrInvalid, field, n, max)
	}
	return nil
}

// checkBytes rejects a value longer than max bytes or not valid UTF-8.
func checkBytes(field, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%w: %s has %d bytes (at most %d)", ErrInvalid, field, len(v), max)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, field)
	}
	return nil
}

// checkTime rejects the zero time and times outside years 1000 to 9999 (in UTC), the range
// MySQL's DATETIME holds; SQLite is held to the same range.
func checkTime(field string, t time.Time) error {
	if y := t.UTC().Year(); t.IsZero() || y < 1000 || y > 9999 {
		return fmt.Errorf("%w: %s %v (want a time in years 1000 to 9999)", ErrInvalid, field, t)
	}
	return nil
}

// clock reads the store's clock (WithClock) and refuses a time the database cannot hold.
func (s *Store) clock() (time.Time, error) {
	t := s.now()
	if err := checkTime("the store's clock returned", t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}
