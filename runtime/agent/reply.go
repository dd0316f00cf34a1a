package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
)

// replyPrefix matches a subject that already says it is a reply ("Re:", "RE[2]:", "AW:", "SV:").
var replyPrefix = regexp.MustCompile(`(?i)^\s*(re|aw|sv|antw|vs)\s*(\[\d+\])?\s*:`)

// NewReply is the Runner's default Compose: the outbound message answering answered with text,
// dated date, for the run runKey.
//   - ThreadID: answered's; Direction: history.Outbound;
//   - From: the first address answered was sent To (the persona's address, as the sender wrote
//     it); To: answered's ReplyTo, else its From;
//   - Subject: answered's with "Re: " in front, unless it already starts with a reply prefix;
//   - MessageID: the first 32 hex digits of the SHA-256 of runKey, "@", and the domain of From
//     ("personagen.invalid" when it has none) — the same for every attempt of the run;
//   - InReplyTo: answered's id; References: its References (or its In-Reply-To) followed by its
//     id, at most store.MaxReferences (the root and the newest kept).
//
// A host with mailboxes uses mail.NewReply instead. It returns an error for an empty runKey or
// when answered has nobody to reply to.
func NewReply(persona *runtime.Persona, answered *history.Message, runKey, text string, date time.Time) (*history.Message, error) {
	if runKey == "" {
		return nil, errors.New("agent: reply: empty run key")
	}
	to := answered.ReplyTo
	if len(to) == 0 && answered.From != "" {
		to = []string{answered.From}
	}
	if len(to) == 0 {
		return nil, errors.New("agent: reply: message " + answered.MessageID + " has no From or Reply-To address")
	}
	from := ""
	if len(answered.To) > 0 {
		from = answered.To[0]
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
	if len(refs) > store.MaxReferences {
		refs = append(refs[:1], refs[len(refs)-(store.MaxReferences-1):]...)
	}
	return &history.Message{
		ThreadID:   answered.ThreadID,
		MessageID:  replyMessageID(runKey, from),
		InReplyTo:  answered.MessageID,
		References: refs,
		Direction:  history.Outbound,
		From:       from,
		To:         to,
		Date:       date,
		Subject:    subject,
		Text:       text,
	}, nil
}

// replyMessageID is the message id of the reply of run runKey sent from the address from.
func replyMessageID(runKey, from string) string {
	sum := sha256.Sum256([]byte(runKey))
	domain := "personagen.invalid"
	if at := strings.LastIndexByte(from, '@'); at >= 0 && at < len(from)-1 {
		if d := strings.ToLower(strings.Trim(from[at+1:], "<> ")); d != "" {
			domain = d
		}
	}
	return hex.EncodeToString(sum[:16]) + "@" + domain
}
