package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
