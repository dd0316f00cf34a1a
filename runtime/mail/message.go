package mail

import (
	netmail "net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
)

// Message is one parsed email. Every string is valid UTF-8; addresses, ids and texts are
// decoded (no encoded words, no transfer encoding, no angle brackets around ids).
type Message struct {
	// MessageID is the Message-ID without angle brackets, or, when the header is missing or
	// unusable, a synthetic id derived from the content (SyntheticID is then true), so that the
	// same message parsed twice has the same id.
	MessageID   string
	SyntheticID bool
	// InReplyTo is the first id of the In-Reply-To header ("" when absent).
	InReplyTo string
	// References are the ids of the References header, oldest first, without duplicates and
	// without the message's own id; at most 100 (the first and the 99 newest).
	References []string

	// From, To, Cc, Bcc and ReplyTo are the address headers; a malformed list keeps every
	// address that could be read (see Problems). Names are decoded.
	From    []netmail.Address
	To      []netmail.Address
	Cc      []netmail.Address
	Bcc     []netmail.Address
	ReplyTo []netmail.Address

	// Date is the Date header, or the arrival time when the header is missing, unreadable or
	// absurd (before 1970, or more than a day after arrival); DateFromHeader says which.
	Date           time.Time
	DateFromHeader bool
	// Arrived is the arrival time Parse was given.
	Arrived time.Time
	// Subject is the decoded Subject header.
	Subject string

	// Text is the plain-text body: the text/plain alternative, the text/plain parts of a mixed
	// message joined by a blank line, or, when there is none, the text runtime.HTMLText extracts
	// from HTML (TextFromHTML is then true). Line breaks are "\n".
	Text         string
	TextFromHTML bool
	// HTML is the HTML body ("" when there is none), line breaks "\n".
	HTML string
	// Attachments are the message's other leaf parts in MIME order: attachments, inline images,
	// forwarded messages, signatures, delivery status reports.
	Attachments []Attachment

	// Header is the top-level header as received: values unfolded but not decoded. Read only.
	Header textproto.MIMEHeader
	// NoReply says why the message must not be answered whoever it is for (auto-replies, bulk
	// mail, delivery reports, null senders); Route adds the per-persona reason OwnAddress.
	NoReply NoReply
	// Problems lists, in the order met, what could not be read exactly (the same input always
	// gives the same list). Parse never fails for them; at most 50 are kept.
	Problems []Problem
	// Size is the raw message size in bytes.
	Size int64
}

// Attachment is one non-body part of a message.
type Attachment struct {
	// ID is stable: "att_" and the first 32 hex digits of the SHA-256 of Data, so the same bytes
	// get the same id in every message and every ingestion (and a blob store can key on it).
	ID string
	// Filename is the decoded file name without directory components ("" when the part has
	// none); ContentType the media type without parameters ("application/octet-stream" when the
	// part declares none that parses).
	Filename    string
	ContentType string
	// Size is len(Data), in bytes.
	Size int64
	// Data holds the decoded bytes.
	Data []byte
	// Inline is true for a part shown inside the body (Content-Disposition inline, or a
	// Content-ID without a disposition), such as an image an HTML body refers to by cid:.
	Inline bool
	// ContentID is the Content-ID without angle brackets ("" when absent).
	ContentID string
}

// ProblemKind classifies a Problem.
type ProblemKind string

// The kinds of problem Parse records.
const (
	// ProblemMIME: the MIME structure is broken (a missing or unclosed boundary, bad base64, an
	// unknown transfer encoding, a part that could not be read).
	ProblemMIME ProblemKind = "mime"
	// ProblemCharset: text in an unknown charset, or bytes not valid in the declared one; the
	// text is kept best-effort (bytes that are not UTF-8 read as windows-1252).
	ProblemCharset ProblemKind = "charset"
	// ProblemHeader: a header with 8-bit bytes that are not UTF-8, or a malformed id.
	ProblemHeader ProblemKind = "header"
	// ProblemAddress: an address list item that is not a well-formed address.
	ProblemAddress ProblemKind = "address"
	// ProblemDate: a Date header that is missing, unreadable, absurd, or read with an assumed
	// zone.
	ProblemDate ProblemKind = "date"
	// ProblemMessageID: the Message-ID is missing or unusable and a synthetic id was used.
	ProblemMessageID ProblemKind = "message-id"
)

// maxProblems bounds the problems kept per message, so hostile input cannot grow them without
// limit; one last problem says how many more were dropped.
const maxProblems = 50

// Problem is one thing Parse could not read exactly: its Kind and a Detail in words that says
// where and what was done instead.
type Problem struct {
	Kind   ProblemKind
	Detail string
}

// String renders the problem as "kind: detail".
func (p Problem) String() string { return string(p.Kind) + ": " + p.Detail }

// Reason says why a message must not be answered.
type Reason string

// The reasons a message is not answered, in the order Parse checks them (the first that applies
// is recorded).
const (
	// ReasonDeliveryReport: a multipart/report (a bounce, a delay or read notice).
	ReasonDeliveryReport Reason = "delivery-report"
	// ReasonNullSender: a null reverse path (Return-Path: <>) or no From address to answer.
	ReasonNullSender Reason = "null-sender"
	// ReasonMailerDaemon: from MAILER-DAEMON.
	ReasonMailerDaemon Reason = "mailer-daemon"
	// ReasonAutoSubmitted: Auto-Submitted other than "no" (RFC 3834), or the legacy
	// X-Autoreply / X-Autorespond headers.
	ReasonAutoSubmitted Reason = "auto-submitted"
	// ReasonPrecedence: Precedence bulk, list, junk or auto_reply.
	ReasonPrecedence Reason = "precedence"
	// ReasonMailingList: a List-Id header (mail distributed by a mailing list).
	ReasonMailingList Reason = "mailing-list"
	// ReasonOwnAddress: from the persona's own address or one of its aliases (set by Route).
	ReasonOwnAddress Reason = "own-address"
)

// NoReply says whether and why a message must not be answered: the zero value means it may be
// answered; otherwise Reason names the rule and Detail the header value that triggered it.
type NoReply struct {
	Reason Reason
	Detail string
}

// Skip reports whether the message must not be answered.
func (n NoReply) Skip() bool { return n.Reason != "" }

// String renders the reason as "reason: detail" ("reason" alone without a detail, "" for the
// zero value); it is the text the store records.
func (n NoReply) String() string {
	if n.Detail == "" {
		return string(n.Reason)
	}
	return string(n.Reason) + ": " + n.Detail
}

// ParseNoReply reads a NoReply back from its String form; "" gives the zero value.
func ParseNoReply(s string) NoReply {
	r, d, _ := strings.Cut(s, ": ")
	return NoReply{Reason: Reason(r), Detail: d}
}

// Sender returns the first From address, or the zero Address when the message has none.
func (m *Message) Sender() netmail.Address {
	if len(m.From) == 0 {
		return netmail.Address{}
	}
	return m.From[0]
}

// Inbound returns the message as the runtime's Inbound in thread threadID: addresses rendered
// as "Name <addr>", attachments with their bytes.
func (m *Message) Inbound(threadID string) *runtime.Inbound {
	in := &runtime.Inbound{
		ThreadID:  threadID,
		MessageID: m.MessageID,
		From:      formatList(m.From),
		To:        formatEach(m.To),
		Cc:        formatEach(m.Cc),
		Date:      m.Date,
		Subject:   m.Subject,
		Text:      m.Text,
		HTML:      m.HTML,
	}
	if len(m.Attachments) > 0 {
		in.Attachments = make([]runtime.Attachment, len(m.Attachments))
		for i, a := range m.Attachments {
			in.Attachments[i] = runtime.Attachment{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size, Data: a.Data}
		}
	}
	return in
}

// formatEach renders each address with formatAddress; nil for none.
func formatEach(list []netmail.Address) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = formatAddress(a)
	}
	return out
}
