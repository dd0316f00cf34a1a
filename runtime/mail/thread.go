package mail

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/personagen/personagen/runtime/history"
)

// ThreadCandidates returns the message ids ThreadID looks up for m, in the order it tries them:
// the References ids oldest first, then In-Reply-To when References does not hold it. A store
// answers them all with one query.
func ThreadCandidates(m *history.Message) []string {
	ids := make([]string, 0, len(m.References)+1)
	ids = append(ids, m.References...)
	if m.InReplyTo != "" && !slices.Contains(m.References, m.InReplyTo) {
		ids = append(ids, m.InReplyTo)
	}
	return ids
}

// ThreadID returns the thread m belongs to in persona's mailbox, and whether it joins a thread
// the mailbox already holds. known reports the thread of a message id the mailbox holds (ok
// false for an unknown id); ThreadID calls it only with ids from ThreadCandidates and does
// nothing else, so it is a pure function of m and known.
//
// The rule: m joins the thread of the first candidate the mailbox knows. Otherwise it starts
// the thread NewThreadID(persona, root), where root is the first References id, else the
// In-Reply-To id, else m's own MessageID. Because the id derives from the root that every
// message of a conversation names first, a reply that arrives before its parent and the parent
// that arrives later compute the same thread id: the parent is the root (its own id) or names
// the same root in its References.
func ThreadID(persona string, m *history.Message, known func(messageID string) (threadID string, ok bool)) (threadID string, joined bool) {
	for _, id := range ThreadCandidates(m) {
		if t, ok := known(id); ok {
			return t, true
		}
	}
	root := m.MessageID
	switch {
	case len(m.References) > 0:
		root = m.References[0]
	case m.InReplyTo != "":
		root = m.InReplyTo
	}
	return NewThreadID(persona, root), false
}

// NewThreadID returns the id of the thread rooted at message id root in persona's mailbox: the
// persona name, "/", and the first 32 hex digits of the SHA-256 of persona and root. Each
// persona's copy of a conversation is its own thread; the id fits the store's 191-character
// thread ids for persona names up to 150 characters (longer names are left out of the id,
// which is then the digest alone).
func NewThreadID(persona, root string) string {
	sum := sha256.Sum256([]byte(persona + "\x00" + root))
	digest := hex.EncodeToString(sum[:16])
	if persona == "" || len(persona) > 150 {
		return digest
	}
	return persona + "/" + digest
}
