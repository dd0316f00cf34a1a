// Package mail turns real email into what a persona answers, and a persona's answer back into
// email.
//
// Start from Ingest (a raw message into the store, once per persona it is for) and, for a
// reply, NewReply and Render. The rules they follow — what is stored, answered and threaded,
// how a message is read, the limits — are docs/mail.md in the repository.
//
// Data flows one way:
//
//	raw message ──► Ingest: Parse ──► Route (which personas) ──► ThreadID (which thread) ──► Store
//	                                                                                          │
//	host's sender ◄── Render ◄── store's outbox ◄── stored reply (NewReply) ◄── runner ◄──────┘
//
// Parse reads one message (MIME, transfer encodings, charsets, RFC 2047 encoded words,
// attachments) with github.com/jhillyerd/enmime/v2 and decides the rest itself: the one
// HTML-to-text path (runtime.HTMLText), charset conversion, lenient address lists, lenient
// dates, a synthetic Message-ID when the header is missing, the limits that make every parsed
// message storable, and what must not be answered. Bad input never makes Parse fail or panic:
// what can be read is kept and each problem is recorded on the message.
//
// Threading (ThreadID) is a pure function over the message and a lookup of the message ids a
// persona's mailbox already holds; routing (Route) compares the message's recipients and sender
// with each persona's mailbox. Ingest runs the three and stores the result through the small
// Store interface, which runtime/store implements, so this package never imports the store.
// NewReply and Render build and render a persona's reply with a Message-ID derived from its run,
// so a reply sent twice is recognisably one message.
//
// # Reading
//
// Charsets are looked up in the WHATWG index, then the IANA registry (golang.org/x/text's
// htmlindex and ianaindex); UTF-7, which those name but cannot convert, is decoded here. The
// same lookup serves text parts, RFC 2047 encoded words and RFC 2231 parameters:
//   - an encoded word holding raw 8-bit bytes (=?iso-8859-1?Q?Fr\xf6sche?=, forbidden but
//     common) is read in its declared charset, recorded;
//   - an RFC 2231 value (filename*=iso-8859-1'de'Fr%F6sche.txt, and continuations filename*0*=…)
//     is read in its declared charset; one in a charset neither index knows is read
//     best-effort and recorded, so a file name is never lost silently;
//   - a first header line that starts with white space is read without it (recorded), so the
//     message keeps its headers.
//
// Transfer encodings are undone here, not by enmime: a body text in base64 stops at its first
// line that is not base64 (a footer appended to the data), keeping what decoded before it
// (recorded); an attachment's stray bytes are skipped. A multipart whose boundary is missing or
// matches no delimiter is read with the boundary its delimiters show (a line "--token" followed
// by a Content- header or a blank line), recorded, or else as text; a delimiter line of any
// boundary the message uses never reaches a text. Multiparts nested deeper than 12 levels are
// left out, recorded.
//
// # Threading
//
// ThreadID derives a new thread's id from the conversation's root (ThreadRoot): the
// conversation an Outlook Thread-Index names (its first 22 bytes, decoded from base64; every
// Outlook and Exchange message of a conversation carries it), else the first References id,
// else In-Reply-To, else the message's own id; a message joins the thread of the first message
// it references that the mailbox holds. So every message with reference headers threads the
// same in any arrival order.
//
// The one exception is Ingest's subject rule, which depends on arrival order: a message with no
// References, In-Reply-To or Thread-Index whose subject starts with a reply or forward prefix
// joins the thread of the sender's newest message (by Date) in the mailbox with the same
// normalised subject (NormalizeSubject: the prefixes re, aw, antw, antwort, sv, vs, ref, réf,
// rif, odp, ynt, atb, 回复, 答复, fwd, fw, wg, tr, rv, enc, doorst, vl, 转发, in any case, with
// an optional "[2]" count and an ASCII or full-width colon, stripped repeatedly; white space
// folded; case ignored; bracketed tags kept) dated at most SubjectWindow (30 days) before it;
// else it starts its own thread. The sender must be the same address; the persona's own
// replies are never found by it. A persona turns the rule off with
// runtime.Persona.Mailbox.DisableSubjectThreading (spec: mailbox.subject_threading: false).
// The store finds the thread through one index entry (runtime/store's ThreadOf).
//
// # What is not answered
//
// A message is stored but not answered (NoReply, with the rule and the header that triggered
// it in the recorded reason) when it is, checked in this order: a delivery report
// (multipart/report, message/delivery-status); from a null reverse path (Return-Path or
// X-Envelope-From "<>", also "< >") or without a From address; from MAILER-DAEMON or postmaster
// (an Exchange non-delivery report sent as text/plain included); Auto-Submitted other than
// "no", X-Autoreply, X-Autorespond, or X-MS-Exchange-Generated-Message-Source (an Exchange
// out-of-office or rule reply); Precedence bulk, list, junk or auto_reply; a List-Id or a
// List-Unsubscribe header (with or without List-Id); an X-Loop or
// X-MS-Exchange-Inbox-Rules-Loop header. Route adds, per persona: from the persona's own
// address or alias (ReasonOwnAddress), and from another persona's address or alias — one of
// the personas Route chooses from — unless the receiving persona lists that persona in
// runtime.Persona.Mailbox.AcceptFrom (spec: mailbox.accept_from), ReasonPersona. So a persona
// answers another persona's mail only where its spec says so, and one host can still run a
// persona that writes to another. Ingest adds ReasonAnswered when the mailbox holds the
// persona's reply to the message already.
//
// # Rendering
//
// Render writes the message itself with the standard library's quoted-printable and base64
// encoders; it does not use enmime's builder, which sends any ASCII text as 7bit whatever its
// line length, leaves an ASCII subject that looks like an encoded word raw, encodes whole
// address and id fields as one encoded word and writes file names as encoded words. The rules,
// each checked by reading every rendering back with Parse and with Python's email package:
//
//   - Lines. No line is longer than 998 octets (RFC 5322 section 2.1.1). Header fields fold at
//     78 characters, before a token and never inside one; only a field holding a long msg-id
//     (at most 250 bytes) or address (at most 254 bytes) has a longer line. The message ends in
//     CRLF and holds no bare CR or LF.
//   - Bodies. A text part is 7bit only when every line is printable ASCII (tabs allowed) of at
//     most 78 octets not ending in white space, and it holds no "=_" (which starts every
//     boundary, so no body line can be a delimiter). Otherwise it is quoted-printable, or base64
//     when more than one byte in six would need escaping. Line breaks of every kind are written
//     as CRLF, so the text reads back with "\n" line breaks. Attachments are base64, their bytes
//     unchanged whatever their type.
//   - Subjects and display names are written as they are when they are printable ASCII words
//     of at most 66 characters separated by single spaces and hold no "=?"; otherwise as RFC
//     2047 encoded words in UTF-8 (Q, or B when a quarter shorter), at most 75 characters,
//     split at character boundaries, so a literal "=?utf-8?q?x?=", non-ASCII text, long words
//     and leading, trailing or repeated spaces read back exactly. In a display name the spaces
//     are placed so that receivers that join a phrase's words with single spaces read them back
//     too: runs of spaces are written as quoted strings, never inside an encoded word.
//   - File names are written quoted when they are printable ASCII of at most 60 characters
//     without `"`, `\`, `;` or "=?", otherwise in RFC 2231's percent-encoded UTF-8, in numbered
//     continuations when long, in both Content-Type (name) and Content-Disposition (filename).
//   - Message-ID, In-Reply-To and References must be RFC 5322 msg-ids (dot-atom-text "@"
//     dot-atom-text or "[literal]"): Render refuses any other, naming the field and the value.
//     NewReply never sends one: ids from the message answered that are not msg-ids are left
//     out of In-Reply-To and References (the reply still threads by the ids that remain and by
//     its own Message-ID), and its own id is always valid (ReplyMessageID).
//   - Header text. A subject, display name or file name holding a control character (a CR or
//     LF above all, which would end the field) or bytes that are not UTF-8 is refused by
//     Render, which writes what is stored or nothing; NewReply turns those characters into
//     spaces in what it takes from the message answered (a hostile sender must not make the
//     reply impossible) and refuses a persona mailbox name holding one (the host's
//     configuration). Addresses are written as net/mail formats them, a non-ASCII address as
//     UTF-8 (RFC 6532: the relay must offer SMTPUTF8).
//
// Parse reads a rendering back exactly, with its own documented normalisations: it trims the
// ends of a subject, a display name and a file name, keeps a file name's base name, and holds
// values to the store's limits.
package mail
