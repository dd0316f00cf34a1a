package transporttest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Postfix is a private Postfix instance: its own configuration and queue directories, an smtpd
// on 127.0.0.1:Port, and its next hops set per domain (transport_maps), so it delivers to the
// test's listeners and to Dovecot and nowhere else. Its queue retries every second.
type Postfix struct {
	Dir  string // the instance's directory (etc/, spool/, data/, maillog)
	Port int    // the smtpd port
	t    testing.TB
}

// PostfixConfig says where a private Postfix delivers.
type PostfixConfig struct {
	// Transports maps a recipient domain to its next hop, in transport_maps' form
	// ("lmtp:inet:127.0.0.1:2424", "smtp:[127.0.0.1]:2525"). Postfix accepts mail for these
	// domains from 127.0.0.1 and refuses every other.
	Transports map[string]string
	// Access maps recipient addresses to an answer for RCPT TO ("451 4.3.0 try later",
	// "550 5.1.1 no such user"): the relay refusing (SetAccess changes it).
	Access map[string]string
	// TLS, when set, offers STARTTLS on the smtpd with the certificate.
	TLS *Cert
}

// StartPostfix starts a private Postfix as c says, stopped (and its directory removed) when the
// test ends. It skips the test without Postfix installed (fails under CI=true).
func StartPostfix(t testing.TB, c PostfixConfig) *Postfix {
	t.Helper()
	Need(t, "/usr/sbin/postfix")
	dir, err := os.MkdirTemp("", "postfix-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the postfix user traverses it
		t.Fatal(err)
	}
	p := &Postfix{Dir: dir, Port: FreePort(t), t: t}
	for _, d := range []string{"etc", "spool", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pf, err := user.Lookup("postfix")
	if err != nil {
		t.Fatalf("the postfix user: %v", err)
	}
	uid, _ := strconv.Atoi(pf.Uid)
	gid, _ := strconv.Atoi(pf.Gid)
	if err := os.Chown(filepath.Join(dir, "data"), uid, gid); err != nil {
		t.Fatal(err)
	}
	var transports, domains []string
	for domain, hop := range c.Transports {
		transports = append(transports, domain+"="+hop)
		domains = append(domains, domain)
	}
	tls := ""
	if c.TLS != nil {
		tls = fmt.Sprintf("smtpd_tls_cert_file = %s\nsmtpd_tls_key_file = %s\nsmtpd_tls_security_level = may\n", c.TLS.CertFile, c.TLS.KeyFile)
	}
	mainCF := fmt.Sprintf(`compatibility_level = 3.6
queue_directory = %[1]s/spool
data_directory = %[1]s/data
mail_owner = postfix
setgid_group = postdrop
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
meta_directory = /etc/postfix
maillog_file = %[1]s/maillog
maillog_file_prefixes = %[1]s
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = relay.test
mydomain = relay.test
myorigin = relay.test
mydestination =
mynetworks = 127.0.0.0/8
relay_domains = %[2]s
transport_maps = inline:{ %[3]s }
default_transport = error:5.1.2 this test relay delivers to its configured domains only
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_recipient_restrictions = check_recipient_access texthash:%[1]s/etc/access
alias_maps =
alias_database =
local_recipient_maps =
biff = no
smtputf8_enable = no
smtp_dns_support_level = disabled
lmtp_dns_support_level = disabled
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
maximal_queue_lifetime = 10m
bounce_queue_lifetime = 10m
delay_warning_time = 0
lmtp_connect_timeout = 5s
smtp_connect_timeout = 5s
lmtp_data_done_timeout = 30s
lmtp_connection_cache_on_demand = no
smtp_connection_cache_on_demand = no
default_process_limit = 10
%[4]s`, dir, strings.Join(domains, ", "), strings.Join(transports, " "), tls)
	masterCF := fmt.Sprintf(`127.0.0.1:%d inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`, p.Port)
	p.write("etc/main.cf", mainCF)
	p.write("etc/master.cf", masterCF)
	p.SetAccess(c.Access)
	p.run("start")
	t.Cleanup(func() { p.run("stop") })
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", p.Port), "postfix", p.Log)
	return p
}

func (p *Postfix) write(name, content string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.Dir, name), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *Postfix) run(args ...string) {
	p.t.Helper()
	out, err := runDaemon(filepath.Join(p.Dir, "command.out"), "/usr/sbin/postfix", append([]string{"-c", filepath.Join(p.Dir, "etc")}, args...)...)
	if err != nil {
		p.t.Fatalf("postfix %s: %v\n%s\n%s", strings.Join(args, " "), err, out, p.Log())
	}
}

// SetAccess replaces the answers to RCPT TO by recipient and makes Postfix read them anew.
func (p *Postfix) SetAccess(access map[string]string) {
	p.t.Helper()
	var b strings.Builder
	for addr, answer := range access {
		fmt.Fprintf(&b, "%s %s\n", addr, answer)
	}
	p.write("etc/access", b.String())
	if _, err := os.Stat(filepath.Join(p.Dir, "spool", "pid", "master.pid")); err == nil {
		p.run("reload")
	}
}

// Addr is the smtpd's address.
func (p *Postfix) Addr() string { return fmt.Sprintf("127.0.0.1:%d", p.Port) }

// Log returns the instance's log.
func (p *Postfix) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "maillog"))
	return string(b)
}

// WaitLog waits up to a minute for the log to hold text, and fails the test otherwise.
func (p *Postfix) WaitLog(text string) {
	p.t.Helper()
	Eventually(p.t, time.Minute, "postfix log has "+text, func() bool { return strings.Contains(p.Log(), text) }, p.Log)
}

// Eventually polls cond every 50 ms until it holds or limit passed; then it fails the test with
// what and the output of detail (when not nil).
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			more := ""
			if detail != nil {
				more = "\n" + detail()
			}
			t.Fatalf("waited %v for: %s%s", limit, what, more)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitListening waits until addr accepts connections.
func waitListening(t testing.TB, addr, name string, log func() string) {
	t.Helper()
	Eventually(t, 30*time.Second, name+" listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}, log)
}

// runDaemon runs a command that starts (or stops) a daemon, with its output in the file out
// rather than a pipe (a daemon keeps the pipe open), and returns that output.
func runDaemon(out, name string, args ...string) (string, error) {
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	b, _ := os.ReadFile(out)
	return string(b), err
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
