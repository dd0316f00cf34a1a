// Package mail turns real email into what a persona answers, and a persona's answer back into
// email.
//
// Data flows one way:
//
//	raw message ──► Parse ──► *Message ──► Route (which personas) ──► ThreadID (which thread)
//	                                                                     │
//	stored reply ◄── runner ◄── store ◄──────────────────────────────────┘
//	     │
//	     └──► NewReply ──► Render ──► RFC 5322 bytes for the host's sender
//
// Parse reads one message (MIME, transfer encodings, charsets, RFC 2047 encoded words,
// attachments) with github.com/jhillyerd/enmime/v2 and decides the rest itself: the one
// HTML-to-text path (runtime.HTMLText), lenient address lists, lenient dates, a synthetic
// Message-ID when the header is missing, and what must not be answered. Bad input never makes
// Parse fail or panic: what can be read is kept and each problem is recorded on the message.
//
// Threading (ThreadID) is a pure function over the message and a lookup of the message ids a
// persona's mailbox already holds; routing (Route) compares the message's recipients with each
// persona's mailbox. Neither touches a database: the store implements the small lookup
// interface, so this package never imports it.
package mail
