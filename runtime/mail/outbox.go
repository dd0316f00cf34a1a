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
	"github.com/personagen/personagen/runtime/history"
)

// ErrNoRecipient is returned (wrapped) by NewReply when the message answered has no address to
// reply to (no Reply-To and no From address).
var ErrNoRecipient = errors.New("mail: nothing to reply to")

// ErrNoMailbox is returned (wrapped) by NewReply when the persona has no mailbox address to send
// from.
var ErrNoMailbox = errors.New("mail: persona has no mailbox address")

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

// NewReply returns the outbound message with which persona answers the message answered in the
// run runKey, dated date, with text as its body — the message the runner stores and Render
// turns into email:
//   - ThreadID: the answered message's; Direction: history.Outbound;
//   - From: the persona's mailbox address, with the mailbox's display name;
//   - To: the answered message's ReplyTo addresses, else its From addresses (Cc: none);
//   - Subject: the answered subject with "Re: " in front, unless it already starts with a reply
//     prefix;
//   - MessageID: ReplyMessageID(runKey, the persona's address);
//   - InReplyTo: the answered message's id; References: its References (or, when it has none,
//     its In-Reply-To) followed by its id, so the customer's next message, which copies them,
//     threads correctly. At most 100 ids are kept: the root and the newest.
//
// It returns ErrNoMailbox when the persona has no mailbox address, ErrNoRecipient when answered
// has nobody to reply to, and an error for an empty runKey.
func NewReply(persona *runtime.Persona, answered *history.Message, runKey, text string, date time.Time) (*history.Message, error) {
	if persona == nil || persona.Mailbox.Address == "" {
		return nil, ErrNoMailbox
	}
	if runKey == "" {
		return nil, errors.New("mail: reply: empty run key")
	}
	to := answered.ReplyTo
	if len(to) == 0 && answered.From != "" {
		to = []string{answered.From}
	}
	var rcpts []netmail.Address
	if len(to) > 0 {
		d := newHeaderDecoder(&Message{})
		rcpts = d.addresses("To", strings.Join(to, ", "))
	}
	if len(rcpts) == 0 {
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
	return &history.Message{
		ThreadID:   answered.ThreadID,
		MessageID:  ReplyMessageID(runKey, persona.Mailbox.Address),
		InReplyTo:  answered.MessageID,
		References: refs,
		Direction:  history.Outbound,
		From:       formatAddress(netmail.Address{Name: persona.Mailbox.Name, Address: persona.Mailbox.Address}),
		To:         formatEach(rcpts),
		Date:       date,
		Subject:    subject,
		Text:       text,
	}, nil
}

// Render returns m as an RFC 5322 message (CRLF line endings), built with enmime's builder:
// From, To, Cc, Subject, Date, Message-ID, In-Reply-To and References from m's fields, the Text
// and HTML bodies, and m's attachments (their Data). Besides those it writes MIME-Version,
// Auto-Submitted: auto-replied (RFC 3834: a program wrote the message in answer to another, so
// well-behaved auto-responders — another persona included — do not answer it) and
// X-Auto-Response-Suppress: OOF, AutoReply (the same request in Microsoft Exchange's terms).
// The rendering is deterministic: the same m gives the same bytes (MIME boundaries are seeded
// from the Message-ID).
//
// It returns an error when m has no MessageID, when From is not exactly one address, when it
// has no To or Cc recipient, or when an address does not parse.
func Render(m *history.Message) ([]byte, error) {
	if m.MessageID == "" {
		return nil, errors.New("mail: render: no Message-ID")
	}
	from, err := netmail.ParseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("mail: render %s: From %q: %w", m.MessageID, m.From, err)
	}
	to, err := parseEach("To", m.To)
	if err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", m.MessageID, err)
	}
	cc, err := parseEach("Cc", m.Cc)
	if err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", m.MessageID, err)
	}
	b := enmime.Builder().
		From(from.Name, from.Address).
		ToAddrs(to).
		CCAddrs(cc).
		Subject(m.Subject).
		Date(m.Date.UTC()).
		Header("Message-ID", "<"+m.MessageID+">").
		Header("Auto-Submitted", "auto-replied").
		Header("X-Auto-Response-Suppress", "OOF, AutoReply").
		Text([]byte(crlf(m.Text)))
	if m.InReplyTo != "" {
		b = b.Header("In-Reply-To", "<"+m.InReplyTo+">")
	}
	if len(m.References) > 0 {
		b = b.Header("References", "<"+strings.Join(m.References, "> <")+">")
	}
	if m.HTML != "" {
		b = b.HTML([]byte(crlf(m.HTML)))
	}
	for _, a := range m.Attachments {
		b = b.AddAttachment(a.Data, a.ContentType, a.Filename)
	}
	sum := sha256.Sum256([]byte(m.MessageID))
	b = b.RandSeed(int64(binary.BigEndian.Uint64(sum[:8])))
	root, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", m.MessageID, err)
	}
	var buf bytes.Buffer
	if err := root.Encode(&buf); err != nil {
		return nil, fmt.Errorf("mail: render %s: %w", m.MessageID, err)
	}
	return buf.Bytes(), nil
}

// parseEach parses one address per string.
func parseEach(field string, list []string) ([]netmail.Address, error) {
	out := make([]netmail.Address, len(list))
	for i, s := range list {
		a, err := netmail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, s, err)
		}
		out[i] = *a
	}
	return out, nil
}

// crlf turns every line break of s into "\r\n".
func crlf(s string) string {
	return strings.ReplaceAll(normalizeNewlines(s), "\n", "\r\n")
}
