package transporttest

import (
	"strings"
	"testing"
	"time"
)

// The helpers' servers work together: swaks → Postfix → Dovecot's LMTP → a maildir; an unknown
// user is refused by Dovecot and Postfix bounces.
func TestPostfixRelaysIntoDovecot(t *testing.T) {
	d := StartDovecot(t, map[string]string{"customer@cust.example": "pw"})
	p := StartPostfix(t, PostfixConfig{Transports: map[string]string{"cust.example": "lmtp:inet:" + d.LMTPAddr()}})
	out, code := Swaks(t, "--server", p.Addr(), "--from", "ann@other.example", "--to", "customer@cust.example", "--header", "Message-Id: <s1@other.example>")
	if code != 0 {
		t.Fatalf("swaks: %d\n%s", code, out)
	}
	Eventually(t, time.Minute, "the message in the customer's mailbox", func() bool { return len(d.Messages("customer@cust.example")) == 1 },
		func() string { return p.Log() + d.Log() })
	if m := string(d.Messages("customer@cust.example")[0]); !strings.Contains(m, "Message-Id: <s1@other.example>") {
		t.Errorf("delivered:\n%s", m)
	}
	out, code = Swaks(t, "--server", p.Addr(), "--to", "nobody@elsewhere.example")
	if code == 0 || !strings.Contains(out, "550 5.1.2") {
		t.Errorf("an open relay?\n%s", out)
	}
}
