package history

import (
	"errors"
	"testing"
)

func TestQueryCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		q    Query
		ok   bool
	}{
		{"thread only", Query{ThreadID: "t"}, true},
		{"every field", Query{ThreadID: "t", ExcludeMessageID: "m", AfterSeq: 3, UpToSeq: 9, Limit: 5, ToolUses: true}, true},
		{"NoLimit", Query{ThreadID: "t", Limit: NoLimit}, true},
		{"no thread", Query{}, false},
		{"limit below NoLimit", Query{ThreadID: "t", Limit: -2}, false},
		{"negative AfterSeq", Query{ThreadID: "t", AfterSeq: -1}, false},
		{"negative UpToSeq", Query{ThreadID: "t", UpToSeq: -1}, false},
	} {
		err := c.q.Check()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidQuery)) {
			t.Errorf("%s: Check() = %v", c.name, err)
		}
	}
}

func TestQueryMaxMessagesFollowsTheLimitConvention(t *testing.T) {
	for _, c := range []struct {
		limit   int
		n       int
		bounded bool
	}{{0, DefaultLimit, true}, {NoLimit, 0, false}, {1, 1, true}, {200, 200, true}} {
		n, bounded := Query{ThreadID: "t", Limit: c.limit}.MaxMessages()
		if n != c.n || bounded != c.bounded {
			t.Errorf("Limit %d: MaxMessages() = %d, %t; want %d, %t", c.limit, n, bounded, c.n, c.bounded)
		}
	}
}
