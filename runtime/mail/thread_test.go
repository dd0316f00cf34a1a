package mail

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/history"
)

func TestThreadIDJoinsTheFirstKnownCandidate(t *testing.T) {
	m := hm(history.Message{MessageID: "own@x", InReplyTo: "parent@x", References: []string{"root@x", "mid@x", "parent@x"}})
	if got, want := ThreadCandidates(m), []string{"root@x", "mid@x", "parent@x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ThreadCandidates = %q, want %q (In-Reply-To already in References)", got, want)
	}
	m2 := hm(history.Message{MessageID: "own@x", InReplyTo: "other@x", References: []string{"root@x"}})
	if got, want := ThreadCandidates(m2), []string{"root@x", "other@x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ThreadCandidates = %q, want %q", got, want)
	}
	tests := []struct {
		known      map[string]string
		want       string
		wantJoined bool
	}{
		{map[string]string{}, NewThreadID("p", "root@x"), false},
		{map[string]string{"parent@x": "T-parent"}, "T-parent", true},
		{map[string]string{"parent@x": "T-parent", "mid@x": "T-mid"}, "T-mid", true},
		{map[string]string{"parent@x": "T-parent", "root@x": "T-root"}, "T-root", true},
		{map[string]string{"own@x": "T-own"}, NewThreadID("p", "root@x"), false}, // its own id is not a candidate
	}
	for _, tt := range tests {
		var asked []string
		got, joined := ThreadID("p", m, func(id string) (string, bool) {
			asked = append(asked, id)
			th, ok := tt.known[id]
			return th, ok
		})
		if got != tt.want || joined != tt.wantJoined {
			t.Errorf("known %v: ThreadID = %q, %v; want %q, %v", tt.known, got, joined, tt.want, tt.wantJoined)
		}
		for _, id := range asked {
			if !strings.HasSuffix(id, "@x") || id == "own@x" {
				t.Errorf("ThreadID asked about %q", id)
			}
		}
	}
	// Without References the root is In-Reply-To, then the message itself.
	if got, _ := ThreadID("p", hm(history.Message{MessageID: "own@x", InReplyTo: "parent@x"}), unknown); got != NewThreadID("p", "parent@x") {
		t.Errorf("In-Reply-To only: %q", got)
	}
	if got, _ := ThreadID("p", hm(history.Message{MessageID: "own@x"}), unknown); got != NewThreadID("p", "own@x") {
		t.Errorf("a new conversation: %q", got)
	}
}

func unknown(string) (string, bool) { return "", false }

// hm returns a parsed message holding h.
func hm(h history.Message) *Message { return &Message{Message: h} }

// TestThreadIDAnyArrivalOrder delivers one conversation in every order and checks that each
// persona ends with one thread holding all of it: a reply that arrives before its parent and
// the parent that arrives later compute the same thread id.
func TestThreadIDAnyArrivalOrder(t *testing.T) {
	conversation := []*Message{
		{Message: history.Message{MessageID: "a@cust"}},                                                                           // the customer's first message
		{Message: history.Message{MessageID: "r1@support", InReplyTo: "a@cust", References: []string{"a@cust"}}},                  // the persona's reply
		{Message: history.Message{MessageID: "b@cust", InReplyTo: "r1@support", References: []string{"a@cust", "r1@support"}}},    // the customer answers it
		{Message: history.Message{MessageID: "c@cust", InReplyTo: "a@cust"}},                                                      // a client that writes In-Reply-To only, to the root
		{Message: history.Message{MessageID: "d@cust", InReplyTo: "b@cust", References: []string{"a@cust", "b@cust"}}},            // a client that trimmed References
		{Message: history.Message{MessageID: "e@other", InReplyTo: "d@cust", References: []string{"x@lost", "a@cust", "d@cust"}}}, // an unknown older root in front
	}
	for _, persona := range []string{"support", "sales"} {
		threads := map[string]bool{}
		permute(len(conversation), func(order []int) {
			mailbox := map[string]string{}
			for _, i := range order {
				m := conversation[i]
				th, _ := ThreadID(persona, m, func(id string) (string, bool) { th, ok := mailbox[id]; return th, ok })
				mailbox[m.MessageID] = th
			}
			first := mailbox["a@cust"]
			for id, th := range mailbox {
				if th != first && id != "e@other" {
					t.Fatalf("order %v: %s is in thread %s, the root in %s", order, id, th, first)
				}
			}
			for _, th := range mailbox {
				threads[th] = true
			}
		})
		// e@other names an unknown root first; it joins the thread only once a message it
		// names is known, so in orders where it arrives first it starts the x@lost thread.
		delete(threads, NewThreadID(persona, "x@lost"))
		if len(threads) != 1 || !threads[NewThreadID(persona, "a@cust")] {
			t.Errorf("%s: threads %v, want only %s", persona, threads, NewThreadID(persona, "a@cust"))
		}
	}
	if NewThreadID("support", "a@cust") == NewThreadID("sales", "a@cust") {
		t.Error("two personas share a thread id")
	}
}

// permute calls f with every permutation of 0..n-1 (Heap's algorithm).
func permute(n int, f func([]int)) {
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k == 1 {
			f(a)
			return
		}
		gen(k - 1)
		for i := 0; i < k-1; i++ {
			if k%2 == 0 {
				a[i], a[k-1] = a[k-1], a[i]
			} else {
				a[0], a[k-1] = a[k-1], a[0]
			}
			gen(k - 1)
		}
	}
	gen(n)
}

func TestNewThreadIDShape(t *testing.T) {
	id := NewThreadID("support-agent", "root@example.com")
	if !regexp.MustCompile(`^support-agent/[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("NewThreadID = %q", id)
	}
	if id != NewThreadID("support-agent", "root@example.com") {
		t.Error("NewThreadID is not deterministic")
	}
	long := strings.Repeat("p", 151)
	if got := NewThreadID(long, "r"); len(got) != 32 {
		t.Errorf("long persona: %q (%d characters), want the 32-digit digest", got, len(got))
	}
	if len(NewThreadID(strings.Repeat("p", 150), strings.Repeat("r", 250))) > 191 {
		t.Error("thread id longer than the store's 191 characters")
	}
}
