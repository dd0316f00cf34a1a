package mail

import (
	netmail "net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// Message is one parsed email: the history.Message the store appends and the runner answers,
// and what only parsing knows (problems, whether to answer it). Ingest turns it into a
// store.Message per persona it is routed to. Every string is valid UTF-8; addresses, ids and texts are decoded
// (no encoded words, no transfer encoding, no angle brackets around ids).
//
// The embedded history.Message has Direction history.Inbound, no Seq and no ThreadID (ThreadID
// decides it); From, To, Cc and ReplyTo are the parsed addresses rendered as "Name <addr>";
// Attachments carry their bytes.
type Message struct {
	history.Message

	// SyntheticID is true when the message had no usable Message-ID and MessageID was derived
	// from the content (the same message parsed twice gets the same id).
	SyntheticID bool
	// ThreadIndex is the conversation an Outlook Thread-Index header names: the first
	// threadIndexRootLen (22) bytes of its base64 value — a time and a GUID that the message
	// starting the conversation sets and every reply copies, adding 5 bytes — as 44 lower-case
	// hex digits; "" when the message has no Thread-Index, or one that does not decode to 22
	// bytes and 5 per reply (recorded in Problems). ThreadID threads by it.
	ThreadIndex string
	// Addresses holds the address headers as parsed; a malformed list keeps every address that
	// could be read (see Problems).
	Addresses Addresses
	// DateFromHeader is false when Date is the arrival time, because the Date header was
	// missing, unreadable or absurd (before 1970, or more than a day after arrival).
	DateFromHeader bool
	// Arrived is the arrival time Parse was given.
	Arrived time.Time
	// TextFromHTML is true when Text was extracted from the HTML body by runtime.HTMLText
	// because the message has no plain text.
	TextFromHTML bool
	// ContentIDs maps the Content-ID of each part that has one (without angle brackets) to its
	// attachment id, so an HTML body's cid: references can be resolved.
	ContentIDs map[string]string
	// Header is the top-level header as received: values unfolded but not decoded. Read only.
	Header textproto.MIMEHeader
	// NoReply says why the message must not be answered whoever it is for (auto-replies, bulk
	// mail, delivery reports, null senders); Route adds the per-persona reasons OwnAddress and
	// Persona.
	NoReply NoReply
	// Problems lists, in the order met, what could not be read exactly (the same input always
	// gives the same list). Parse never fails for them; at most 50 are kept.
	Problems []Problem
	// Size is the raw message size in bytes.
	Size int64
}

// threadIndexRootLen is the length in bytes of a Thread-Index's conversation root.
const threadIndexRootLen = 22

// Addresses are a message's address headers, parsed, in header order.
type Addresses struct {
	From    []netmail.Address
	To      []netmail.Address
	Cc      []netmail.Address
	Bcc     []netmail.Address
	ReplyTo []netmail.Address
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
// limit; one last problem says the rest were left out.
const maxProblems = 50

// Problem is one thing Parse could not read exactly: its Kind and a Detail in words that says
// where and what was done instead.
type Problem struct {
	Kind   ProblemKind
	Detail string
}

// String renders the problem as "kind: detail", the form the store records.
func (p Problem) String() string { return string(p.Kind) + ": " + p.Detail }

// Reason says why a message must not be answered.
type Reason string

// The reasons a message is not answered, in the order Parse checks them (the first that applies
// is recorded); the Detail of each names the rule that applied: the header and its value, or
// the address.
const (
	// ReasonDeliveryReport: a multipart/report (a bounce, a delay or read notice).
	ReasonDeliveryReport Reason = "delivery-report"
	// ReasonNullSender: a null reverse path (Return-Path or X-Envelope-From <>, white space
	// inside the brackets allowed: "< >"), or no From address to answer.
	ReasonNullSender Reason = "null-sender"
	// ReasonMailerDaemon: from MAILER-DAEMON or postmaster (the local part, in any case): a
	// mail system's notice, such as an Exchange non-delivery report sent as text/plain.
	ReasonMailerDaemon Reason = "mailer-daemon"
	// ReasonAutoSubmitted: Auto-Submitted other than "no" (RFC 3834), the legacy X-Autoreply /
	// X-Autorespond headers, or X-MS-Exchange-Generated-Message-Source (Exchange writes it on
	// the messages its agents generate: out-of-office replies, rule replies).
	ReasonAutoSubmitted Reason = "auto-submitted"
	// ReasonPrecedence: Precedence bulk, list, junk or auto_reply.
	ReasonPrecedence Reason = "precedence"
	// ReasonMailingList: a List-Id header (mail distributed by a mailing list), or a
	// List-Unsubscribe header (a newsletter, marketing mail: bulk mail whose sender offers
	// unsubscribing, with or without List-Id).
	ReasonMailingList Reason = "mailing-list"
	// ReasonLoop: a loop-detection header a program wrote when it sent or forwarded the
	// message: X-Loop (ticket systems, procmail, list managers), or
	// X-MS-Exchange-Inbox-Rules-Loop (an Exchange inbox rule forwarded or redirected it).
	ReasonLoop Reason = "loop"
	// ReasonOwnAddress: from the persona's own address or one of its aliases (set by Route).
	ReasonOwnAddress Reason = "own-address"
	// ReasonPersona: from another persona's address or alias that the persona does not accept
	// mail from (runtime.Persona's Mailbox.AcceptFrom; set by Route).
	ReasonPersona Reason = "persona"
	// ReasonAnswered: the persona's mailbox already holds an outbound message whose In-Reply-To
	// is this message's id (its reply arrived first: an import of a sent folder, a late
	// delivery); set by Ingest, Detail "<reply id> answers it".
	ReasonAnswered Reason = "answered"
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
	if len(m.Addresses.From) == 0 {
		return netmail.Address{}
	}
	return m.Addresses.From[0]
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
