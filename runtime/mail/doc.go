// Package mail turns real email into what a persona answers, and a persona's answer back into
// email.
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
package mail
