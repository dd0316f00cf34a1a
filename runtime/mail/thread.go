package mail

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ThreadCandidates returns the message ids ThreadID looks up for m, in the order it tries them:
// the References ids oldest first, then In-Reply-To when References does not hold it. A store
// answers them all with one query.
func ThreadCandidates(m *Message) []string {
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
// the thread NewThreadID(persona, ThreadRoot(m)): the conversation an Outlook Thread-Index
// names, else the first References id, else the In-Reply-To id, else m's own MessageID.
// Because the id derives from the root that every message of a conversation names — Outlook
// and Exchange write the conversation's Thread-Index into each of its messages, other clients
// name the first message in References — a reply that arrives before its parent and the parent
// that arrives later compute the same thread id: the parent is the root (its own id, or its
// Thread-Index) or names the same root.
//
// One conversation can still be split: a message without a Thread-Index (a client other than
// Outlook, or the persona's own reply) that arrives before every message of the conversation
// it references starts the thread of its References root, and the Outlook messages, which
// derive theirs from the Thread-Index, join it only through an id they reference. And one
// rule of Ingest depends on arrival order: a reply without any reference header joins the
// sender's latest thread of the same subject (see SubjectKey); ThreadID itself never does.
func ThreadID(persona string, m *Message, known func(messageID string) (threadID string, ok bool)) (threadID string, joined bool) {
	for _, id := range ThreadCandidates(m) {
		if t, ok := known(id); ok {
			return t, true
		}
	}
	return NewThreadID(persona, ThreadRoot(m)), false
}

// ThreadRoot returns the root ThreadID derives a new thread's id from (see ThreadID):
// "thread-index:" and m.ThreadIndex when m has one (no message id has that form: ids hold an
// "@"), else the first References id, else the In-Reply-To id, else m's MessageID.
func ThreadRoot(m *Message) string {
	switch {
	case m.ThreadIndex != "":
		return "thread-index:" + m.ThreadIndex
	case len(m.References) > 0:
		return m.References[0]
	case m.InReplyTo != "":
		return m.InReplyTo
	}
	return m.MessageID
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

// SubjectWindow is how far back, by Date, Ingest's subject rule looks for the thread a reply
// without reference headers belongs to (see SubjectKey): 30 days.
const SubjectWindow = 30 * 24 * time.Hour

// replyPrefixes are the subject prefixes NormalizeSubject strips, lower-case, each followed in
// a subject by an optional count ("[2]", "(2)") and a colon (ASCII or full-width), in any
// letter case, repeated: the reply prefixes of mail clients in English and other languages
// (re; aw, antw, antwort: German and Dutch; sv: Scandinavian; vs: Finnish; ref, réf: French;
// rif: Italian; odp: Polish; ynt: Turkish; atb: Latvian; 回复, 答复: Chinese) and the forward
// prefixes (fwd, fw; wg: German; tr: French; rv: Spanish; enc: Portuguese; doorst: Dutch; vl:
// Finnish; 转发: Chinese).
var replyPrefixes = []string{"re", "aw", "antw", "antwort", "sv", "vs", "ref", "réf", "rif", "odp", "ynt", "atb", "回复", "答复",
	"fwd", "fw", "wg", "tr", "rv", "enc", "doorst", "vl", "转发"}

// NormalizeSubject returns the subject a reply and the message it answers share, and whether
// s starts with a reply or forward prefix: s with every leading reply or forward prefix removed (any letter case, a count such as "[2]" after it, the colon ASCII or full-width,
// repeated: "AW: Re[2]: Fwd: x" gives "x"), runs of white space made one space, outer space
// trimmed, lower-cased. The prefixes, in any letter case: re; aw, antw, antwort (German,
// Dutch); sv (Scandinavian); vs (Finnish); ref, réf (French); rif (Italian); odp (Polish); ynt
// (Turkish); atb (Latvian); 回复, 答复 (Chinese); and to forward fwd, fw; wg (German); tr
// (French); rv (Spanish); enc (Portuguese); doorst (Dutch); vl (Finnish); 转发 (Chinese). Bracketed tags ("[Ticket #4711]", a list's "[acme-users]") are kept:
// they belong to the conversation's subject, and stripping them would join two tickets of one
// sender.
func NormalizeSubject(s string) (base string, prefixed bool) {
	s = strings.Join(strings.Fields(s), " ")
	for {
		rest, ok := cutPrefix(s)
		if !ok {
			break
		}
		s, prefixed = rest, true
	}
	return strings.ToLower(s), prefixed
}

// cutPrefix removes one reply or forward prefix from the start of s (see NormalizeSubject).
func cutPrefix(s string) (string, bool) {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) {
			break
		}
		i += n
	}
	word := strings.ToLower(s[:i])
	if i == 0 || !slices.Contains(replyPrefixes, word) {
		return s, false
	}
	rest := s[i:]
	if len(rest) > 0 && (rest[0] == '[' || rest[0] == '(') {
		closing := map[byte]byte{'[': ']', '(': ')'}[rest[0]]
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 1 || j >= len(rest) || rest[j] != closing {
			return s, false
		}
		rest = rest[j+1:]
	}
	rest = strings.TrimLeft(rest, " ")
	switch {
	case strings.HasPrefix(rest, ":"):
		rest = rest[1:]
	case strings.HasPrefix(rest, "："):
		rest = rest[len("："):]
	default:
		return s, false
	}
	return strings.TrimLeft(rest, " "), true
}

// SubjectKey returns the key under which a store finds m for Ingest's subject rule: the first
// 32 hex digits of the SHA-256 of the sender's address (lower-case) and the normalised subject
// (NormalizeSubject); "" when m has no From address or its normalised subject is empty. Ingest
// stores it with every inbound message and, for a message that has no References, no
// In-Reply-To and no Thread-Index but a subject with a reply or forward prefix, looks up the
// newest message of the mailbox with the same key whose Date is at most SubjectWindow before
// m's: m joins that message's thread. That lookup depends on arrival order (the reply must
// arrive after a message of the thread it joins), the one exception to ThreadID's order
// independence; a persona turns it off with Mailbox.DisableSubjectThreading.
func SubjectKey(m *Message) string {
	sender := canonicalAddress(m.Sender().Address)
	base, _ := NormalizeSubject(m.Subject)
	if sender == "" || base == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(sender + "\x00" + base))
	return hex.EncodeToString(sum[:16])
}

// bySubject reports whether Ingest's subject rule applies to m (see SubjectKey): it has no
// reference header, and its subject says it is a reply or a forward.
func bySubject(m *Message) bool {
	if len(m.References) > 0 || m.InReplyTo != "" || m.ThreadIndex != "" {
		return false
	}
	_, prefixed := NormalizeSubject(m.Subject)
	return prefixed
}
