package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/jhillyerd/enmime/v2"

	"github.com/personagen/personagen/runtime"
)

// ErrNoRecipient is returned (wrapped) by NewReply when the message answered has no address to
// reply to (no Reply-To and no From address).
var ErrNoRecipient = errors.New("mail: nothing to reply to")

// ErrNoMailbox is returned (wrapped) by NewReply when the persona has no mailbox address to send
// from.
var ErrNoMailbox = errors.New("mail: persona has no mailbox address")

// Outgoing is an email a persona sends: everything Render needs. Ids are without angle
// brackets.
type Outgoing struct {
	MessageID  string
	From       netmail.Address
	To         []netmail.Address
	Cc         []netmail.Address
	Subject    string
	Date       time.Time
	InReplyTo  string
	References []string
	Text       string
	HTML       string
	// Attachments are attached in order (Filename, ContentType and Data are used).
	Attachments []Attachment
}

// ReplyMessageID returns the Message-ID of the reply sent by the run with key runKey from the
// address from: the first 32 hex digits of the SHA-256 of runKey, "@", and from's domain
// ("personagen.invalid" when from has none). The same run always sends the same id, so a reply
// sent twice (a crash between sending and recording it as sent) is recognisable as one message
// by every receiver, and the customer's answer, which names this id in In-Reply-To, joins the
// persona's thread.
func ReplyMessageID(runKey, from string) string {
	sum := sha256.Sum256([]byte(runKey))
	domain := "personagen.invalid"
	if at := strings.LastIndexByte(from, '@'); at >= 0 && at < len(from)-1 {
		domain = strings.ToLower(strings.Trim(from[at+1:], "<> "))
	}
	return hex.EncodeToString(sum[:16]) + "@" + domain
}

// replyPrefix matches a subject that already says it is a reply ("Re:", "RE[2]:", "AW:", "SV:").
var replyPrefix = regexp.MustCompile(`(?i)^\s*(re|aw|sv|antw|vs)\s*(\[\d+\])?\s*:`)

// NewReply returns the email with which persona answers the message answered in the run runKey,
// dated date, with text as its body:
//   - From: the persona's mailbox address, with the mailbox's display name;
//   - To: the answered message's Reply-To addresses, else its From addresses (Cc: none);
//   - Subject: the answered subject with "Re: " in front, unless it already starts with a reply
//     prefix;
//   - Message-ID: ReplyMessageID(runKey, the persona's address);
//   - In-Reply-To: the answered message's id; References: its References (or, when it has none,
//     its In-Reply-To) followed by its id, so the customer's next message, which copies them,
//     threads correctly. At most 100 ids are kept: the root and the newest.
//
// It returns ErrNoMailbox when the persona has no mailbox address, ErrNoRecipient when answered
// has nobody to reply to, and an error for an empty runKey.
func NewReply(persona *runtime.Persona, answered *Message, runKey, text string, date time.Time) (*Outgoing, error) {
	if persona == nil || persona.Mailbox.Address == "" {
		return nil, ErrNoMailbox
	}
	if runKey == "" {
		return nil, errors.New("mail: reply: empty run key")
	}
	to := answered.ReplyTo
	if len(to) == 0 {
		to = answered.From
	}
	if len(to) == 0 {
		return nil, fmt.Errorf("%w: message %s has no Reply-To or From address", ErrNoRecipient, answered.MessageID)
	}
	subject := answered.Subject
	if !replyPrefix.MatchString(subject) {
		subject = strings.TrimSpace("Re: " + subject)
	}
	refs := answered.References
	if len(refs) == 0 && answered.InReplyTo != "" {
		refs = []string{answered.InReplyTo}
	}
	refs = append(append([]string(nil), refs...), answered.MessageID)
	if len(refs) > maxReferences {
		refs = append(refs[:1], refs[len(refs)-(maxReferences-1):]...)
	}
	return &Outgoing{
		MessageID:  ReplyMessageID(runKey, persona.Mailbox.Address),
		From:       netmail.Address{Name: persona.Mailbox.Name, Address: persona.Mailbox.Address},
		To:         append([]netmail.Address(nil), to...),
		Subject:    subject,
		Date:       date,
		InReplyTo:  answered.MessageID,
		References: refs,
		Text:       text,
	}, nil
}

// Render returns o as an RFC 5322 message (CRLF line endings), built with enmime's builder.
// Besides o's fields it writes MIME-Version, Auto-Submitted: auto-replied (RFC 3834: the
// message was written by a program in answer to another, so well-behaved auto-responders,
// another persona included, do not answer it) and X-Auto-Response-Suppress: OOF, AutoReply (the
// same request in Microsoft Exchange's terms). The rendering is deterministic: the same o gives
// the same bytes (MIME boundaries are seeded from the Message-ID). It returns an error when o
// has no MessageID, no From address or no recipient.
func Render(o *Outgoing) ([]byte, error) {
	if o.MessageID == "" {
		return nil, errors.New("mail: render: no Message-ID")
	}
	b := enmime.Builder().
		From(o.From.Name, o.From.Address).
		ToAddrs(o.To).
		CCAddrs(o.Cc).
		Subject(o.Subject).
		Date(o.Date.UTC()).
		Header("Message-ID", "<"+o.MessageID+">").
		Header("Auto-Submitted", "auto-replied").
		Header("X-Auto-Response-Suppress", "OOF, AutoReply").
		Text([]byte(crlf(o.Text)))
	if o.InReplyTo != "" {
		b = b.Header("In-Reply-To", "<"+o.InReplyTo+">")
	}
	if len(o.References) > 0 {
		b = b.Header("References", "<"+strings.Join(o.References, "> <")+">")
	}
	if o.HTML != "" {
		b = b.HTML([]byte(crlf(o.HTML)))
	}
	for _, a := range o.Attachments {
		b = b.AddAttachment(a.Data, a.ContentType, a.Filename)
	}
	sum := sha256.Sum256([]byte(o.MessageID))
	b = b.RandSeed(int64(binary.BigEndian.Uint64(sum[:8])))
	root, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", o.MessageID, err)
	}
	var buf bytes.Buffer
	if err := root.Encode(&buf); err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", o.MessageID, err)
	}
	return buf.Bytes(), nil
}

// crlf turns every line break of s into "\r\n".
func crlf(s string) string {
	return strings.ReplaceAll(normalizeNewlines(s), "\n", "\r\n")
}
