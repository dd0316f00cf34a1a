package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/store"
)

// ReplyKey returns the run key of persona's reply to the message messageID of mailbox:
// "reply:<persona>/<32 hex digits of the SHA-256 of mailbox, NUL, messageID>". A redelivered
// message gets the same key, so its run resumes instead of starting again. When persona holds
// "/" or the key would exceed store.MaxNameChars characters, the persona is hashed into the
// digest too ("reply:<64 hex digits>").
func ReplyKey(persona, mailbox, messageID string) string {
	sum := sha256.Sum256([]byte(mailbox + "\x00" + messageID))
	key := "reply:" + persona + "/" + hex.EncodeToString(sum[:16])
	if strings.Contains(persona, "/") || utf8.RuneCountInString(key) > store.MaxNameChars {
		sum = sha256.Sum256([]byte(persona + "\x00" + mailbox + "\x00" + messageID))
		key = "reply:" + hex.EncodeToString(sum[:])
	}
	return key
}

// FireKey returns the run key of persona's responsibility firing at the instant at:
// "fire:<persona>/<responsibility>@<at in UTC, RFC 3339>", for example
// "fire:research-assistant/daily-digest@2026-03-29T06:00:00Z". When a name holds "/" or "@" or
// the key would exceed store.MaxNameChars characters, the two names are replaced by the first 32
// hex digits of the SHA-256 of persona, NUL, responsibility. It is the key a scheduler claims the
// fire with, so every replica names the fire alike.
func FireKey(persona, responsibility string, at time.Time) string {
	when := at.UTC().Format(time.RFC3339Nano)
	key := "fire:" + persona + "/" + responsibility + "@" + when
	if strings.ContainsAny(persona+responsibility, "/@") || utf8.RuneCountInString(key) > store.MaxNameChars {
		sum := sha256.Sum256([]byte(persona + "\x00" + responsibility))
		key = "fire:" + hex.EncodeToString(sum[:16]) + "@" + when
	}
	return key
}
