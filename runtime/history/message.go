package history

import "time"

// Direction says whether a stored message came in to the persona or went out from it.
type Direction string

// The two directions. Inbound messages replay as user turns, outbound as assistant turns.
const (
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// Message is one email of a thread as the history reads it — headers, bodies, attachments and
// the tool rounds recorded after it: what a [Source] holds and returns, what a store appends
// (store.Message embeds it), and the message a reply run answers (runtime.Invocation.Inbound).
// The thread_history resolver renders it into the chat.Messages a model reads.
//
// Seq is its insertion key: the order in which the source received the thread's messages,
// unique and increasing, and the order of every replay (0 for a message not stored yet).
// ThreadID is the thread it belongs to. MessageID is its unique id (an email's Message-ID);
// InReplyTo and References are the ids of the messages it answers, as an email's In-Reply-To
// and References headers list them. Date is its Date header (in UTC, to the microsecond, as a
// source returns it); replayed turns show it, but it orders nothing, since the sender's clock
// set it. From, To and Cc are address strings as received ("Ada <ada@example.com>"); ReplyTo
// lists the addresses a reply goes to instead of From (an email's Reply-To; empty for none).
// Text is the plain-text body and HTML the HTML body; either may be empty. ToolUses holds the tool
// calls recorded for the run (or runs) that answered this message, in any order (see
// [ToolUse]); a source fills it only when the Query asks.
type Message struct {
	Seq         int64
	ThreadID    string
	MessageID   string
	InReplyTo   string
	References  []string
	Direction   Direction
	From        string
	To          []string
	Cc          []string
	ReplyTo     []string
	Date        time.Time
	Subject     string
	Text        string
	HTML        string
	Attachments []Attachment
	ToolUses    []ToolUse
}

// Attachment is one file attached to a message: its ID (as the host's attachment tools accept
// it), Filename, ContentType (a media type such as "application/pdf"), Size in bytes, and
// Data, its bytes when the host has them. A [Source] keeps metadata only and returns Data nil;
// the message a run answers may carry Data, so its images and documents reach the model as
// parts.
type Attachment struct {
	ID          string
	Filename    string
	ContentType string
	Size        int64
	Data        []byte
}

// ToolUse is one recorded tool call and its result.
//
// RunID names the run that made the call, TurnIndex the tool-calling round within that run
// (from 0), Position the call's place within the round (from 0): the uses sharing RunID and
// TurnIndex form one round. Seq is the row's insertion key; a source assigns increasing Seqs
// in the order it recorded the uses, which is how the replay orders rounds (the smallest Seq
// of each round first). Arguments and Result are the stored texts, possibly clipped (then no
// longer valid JSON). HasResult is false when the source recorded the call but no result for
// it (the SQL store always records both); Succeeded is the tool's own verdict.
type ToolUse struct {
	Seq        int64
	RunID      string
	TurnIndex  int
	Position   int
	ToolCallID string
	ToolName   string
	Arguments  string
	Result     string
	HasResult  bool
	Succeeded  bool
}
