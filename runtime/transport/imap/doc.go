// Package imap receives a persona's mail from IMAP mailboxes (RFC 9051/3501) with
// github.com/emersion/go-imap/v2: a Receiver is a service.Receiver that reads one or more
// mailboxes of one account, delivers every new message, and only then acknowledges it on the
// server — flags it \Seen, or moves it to another mailbox.
//
// Start from New with Options (ParseURL reads them from an imaps:// or imap:// URL).
//
// For each mailbox it keeps a checkpoint in the store (store.Checkpoint: the mailbox's
// UIDVALIDITY and the highest UID up to which every message was delivered and acknowledged), so
// it reads only what is new. Bodies are fetched with BODY.PEEK[], which leaves \Seen alone: a
// message fetched but not delivered (a crash, a store error) stays unseen and beyond the
// checkpoint, and is fetched again; a message delivered but not yet acknowledged is delivered
// again, which stores nothing (ingestion is idempotent by Message-ID). A mailbox whose
// UIDVALIDITY changed is read again from its start (its unseen messages when acknowledging with
// \Seen, all of them when moving). A message larger than Options.MaxMessageBytes, or one the
// Deliverer refuses for good, is left where it is, unseen, and passed by (logged).
//
// New mail is noticed with IDLE (RFC 2177) when the server offers it — restarted every
// IdleInterval, and the mailbox checked then too — or by polling every PollInterval otherwise.
// A failed connection is made again after a backoff that doubles from MinBackoff to MaxBackoff
// and starts over once a session worked.
package imap
