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
package mail
