package mail

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"

	"golang.org/x/net/idna"

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
// address from: the first 32 hex digits of the SHA-256 of runKey, "@", and from's domain in
// lower case, in its ASCII (IDNA) form when it is an internationalised name. The domain is
// "personagen.invalid" when from has none or it is not a valid msg-id domain (a dot-atom or a
// [literal]), so the id is always a valid msg-id. The same run always sends the same id, so a
// reply sent twice (a crash between sending and recording it as sent) is recognisable as one
// message by every receiver, and the customer's answer, which names this id in In-Reply-To,
// joins the persona's thread.
func ReplyMessageID(runKey, from string) string {
	sum := sha256.Sum256([]byte(runKey))
	domain := ""
	if at := strings.LastIndexByte(from, '@'); at >= 0 && at < len(from)-1 {
		domain = strings.ToLower(strings.Trim(from[at+1:], "<> "))
	}
	if !isASCII([]byte(domain)) {
		domain, _ = idna.Lookup.ToASCII(domain)
	}
	id := hex.EncodeToString(sum[:16]) + "@" + domain
	if domain == "" || msgIDProblem(id) != "" {
		id = hex.EncodeToString(sum[:16]) + "@personagen.invalid"
	}
	return id
}

// replyPrefix matches a subject that already says it is a reply ("Re:", "RE[2]:", "AW:", "SV:").
var replyPrefix = regexp.MustCompile(`(?i)^\s*(re|aw|sv|antw|vs)\s*(\[\d+\])?\s*:`)

// NewReply returns the outbound message with which persona answers the message answered in the
// run runKey, dated date, with text as its body — the message the runner stores and Render
// turns into email. Every message it returns renders (Render returns no error for it):
//   - ThreadID: the answered message's; Direction: history.Outbound;
//   - From: the persona's mailbox address, with the mailbox's display name (its ends trimmed);
//   - To: the answered message's ReplyTo addresses, else its From addresses (Cc: none); an
//     address that cannot be written (longer than 254 bytes, or not reading back as itself) is
//     left out, and each control character in a name becomes a space;
//   - Subject: the answered subject with each control character (a CR or LF a host put in,
//     a tab) turned into a space, bytes that are not UTF-8 into U+FFFD, and the ends trimmed;
//     then "Re: " in front unless it already starts with a reply prefix, and cut to the store's
//     16 KiB at a character boundary;
//   - MessageID: ReplyMessageID(runKey, the persona's address);
//   - InReplyTo: the answered message's id; References: its References (or, when it has none,
//     its In-Reply-To) followed by its id, each id once, so the customer's next message, which
//     copies them, threads correctly. At most 100 ids are kept: the root and the newest. An id
//     that is not a valid msg-id (a hostile or broken sender's, which Parse keeps as it came)
//     is left out of both rather than refused: the reply can still be sent, and it threads
//     through the ids that remain and through its own Message-ID, which the customer's answer
//     names;
//   - Text: text, bytes that are not UTF-8 turned into U+FFFD.
//
// It returns ErrNoMailbox when the persona has no mailbox address, ErrNoRecipient when answered
// has nobody to reply to (none of its addresses can be written), an error for an empty runKey
// or a zero date, and an error naming the value when the persona's mailbox address is not a
// plain address (local@domain, at most 254 bytes) or its display name is not valid UTF-8 or
// holds a control character: those are the host's configuration, and a reply is not sent from
// a mangled identity.
func NewReply(persona *runtime.Persona, answered *history.Message, runKey, text string, date time.Time) (*history.Message, error) {
	if persona == nil || persona.Mailbox.Address == "" {
		return nil, ErrNoMailbox
	}
	if runKey == "" {
		return nil, errors.New("mail: reply: empty run key")
	}
	if date.IsZero() {
		return nil, errors.New("mail: reply: zero date")
	}
	box := persona.Mailbox
	if a, err := netmail.ParseAddress(box.Address); err != nil || a.Name != "" || a.Address != box.Address {
		return nil, fmt.Errorf("mail: reply: persona %s: mailbox address %q is not a plain address (local@domain)", persona.Name, box.Address)
	}
	from := netmail.Address{Name: strings.TrimSpace(box.Name), Address: box.Address}
	if p := addressProblem(from); p != "" {
		return nil, fmt.Errorf("mail: reply: persona %s: mailbox %q: %s", persona.Name, box.Name+" <"+box.Address+">", p)
	}
	to := answered.ReplyTo
	if len(to) == 0 && answered.From != "" {
		to = []string{answered.From}
	}
	rcpts := replyRecipients(to)
	if len(rcpts) == 0 {
		return nil, fmt.Errorf("%w: message %s has no Reply-To or From address that can be written", ErrNoRecipient, answered.MessageID)
	}
	subject := foldText(answered.Subject)
	if !replyPrefix.MatchString(subject) {
		subject = strings.TrimSpace("Re: " + subject)
	}
	subject = strings.TrimSpace(clipBytes(subject, maxSubjectBytes))
	refs := answered.References
	if len(refs) == 0 && answered.InReplyTo != "" {
		refs = []string{answered.InReplyTo}
	}
	refs = validIDs(append(append([]string(nil), refs...), answered.MessageID))
	if len(refs) > maxReferences {
		refs = append(refs[:1], refs[len(refs)-(maxReferences-1):]...)
	}
	inReplyTo := ""
	if msgIDProblem(answered.MessageID) == "" {
		inReplyTo = answered.MessageID
	}
	return &history.Message{
		ThreadID:   answered.ThreadID,
		MessageID:  ReplyMessageID(runKey, box.Address), // always a valid msg-id
		InReplyTo:  inReplyTo,
		References: refs,
		Direction:  history.Outbound,
		From:       formatAddress(from),
		To:         formatEach(rcpts),
		Date:       date,
		Subject:    subject,
		Text:       strings.ToValidUTF8(text, "\uFFFD"),
	}, nil
}

// replyRecipients reads the stored address strings of the message answered (formatAddress's
// "Name <addr>", which net/mail reads back exactly; a host-built string that net/mail refuses is
// read leniently, as Parse reads a header) and keeps those Render can write, their names
// without control characters.
func replyRecipients(list []string) []netmail.Address {
	var out []netmail.Address
	for _, s := range list {
		addrs, err := netmail.ParseAddressList(s)
		if err != nil {
			d := newHeaderDecoder(&Message{})
			for _, a := range d.addresses("To", s) {
				addrs = append(addrs, &a)
			}
		}
		for _, a := range addrs {
			c := netmail.Address{Name: foldText(a.Name), Address: a.Address}
			if addressProblem(c) == "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// validIDs returns the ids that are valid msg-ids, in order, without repeats.
func validIDs(ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if msgIDProblem(id) == "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
