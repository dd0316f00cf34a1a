package transporttest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Dovecot is a private Dovecot instance serving IMAP (plain with STARTTLS on IMAPPort, implicit
// TLS on IMAPSPort) and LMTP (LMTPPort) on 127.0.0.1 for the users it was started with, their
// mail in maildirs under Dir.
type Dovecot struct {
	Dir                           string
	IMAPPort, IMAPSPort, LMTPPort int
	Cert                          *Cert
	t                             testing.TB
}

// StartDovecot starts a private Dovecot whose users are the keys of users (full addresses,
// "customer@cust.example") with the values as passwords; stopped when the test ends. LMTP
// refuses every other recipient (550 5.1.1). It skips the test without Dovecot installed (fails
// under CI=true).
func StartDovecot(t testing.TB, users map[string]string) *Dovecot {
	t.Helper()
	Need(t, "/usr/sbin/dovecot")
	Need(t, "/usr/lib/dovecot/imap")
	Need(t, "/usr/lib/dovecot/lmtp")
	dir, err := os.MkdirTemp("", "dovecot-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Dovecot{Dir: dir, IMAPPort: FreePort(t), IMAPSPort: FreePort(t), LMTPPort: FreePort(t), t: t}
	d.Cert = NewCert(t, dir)
	mail := filepath.Join(dir, "mail")
	if err := os.MkdirAll(mail, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mail, 65534, 65534); err != nil { // nobody:nogroup owns the mail
		t.Fatal(err)
	}
	var names []string
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var passwd strings.Builder
	for _, u := range names {
		fmt.Fprintf(&passwd, "%s:{PLAIN}%s::::::\n", u, users[u])
	}
	d.write("passwd", passwd.String())
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
instance_name = dovecot-test-%[5]d
listen = 127.0.0.1
protocols = imap lmtp
ssl = yes
ssl_cert = <%[2]s
ssl_key = <%[3]s
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_username_format = %%Lu
first_valid_uid = 65534
mail_location = maildir:%[4]s/%%Lu
mail_uid = 65534
mail_gid = 65534
default_login_user = dovenull
default_internal_user = dovecot
passdb {
  driver = passwd-file
  args = %[1]s/passwd
}
userdb {
  driver = static
  args = uid=65534 gid=65534 home=%[4]s/%%Lu
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[5]d
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = %[6]d
    ssl = yes
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = %[7]d
  }
  unix_listener lmtp {
    mode = 0600
  }
}
service auth {
  unix_listener auth-userdb {
    mode = 0600
  }
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Processed {
    auto = create
  }
}
lmtp_rcpt_check_quota = no
protocol lmtp {
  postmaster_address = postmaster@dovecot.test
}
`, dir, d.Cert.CertFile, d.Cert.KeyFile, mail, d.IMAPPort, d.IMAPSPort, d.LMTPPort)
	d.write("dovecot.conf", conf)
	if out, err := runDaemon(filepath.Join(dir, "start.out"), "/usr/sbin/dovecot", "-c", d.conf()); err != nil {
		t.Fatalf("dovecot: %v\n%s\n%s", err, out, d.Log())
	}
	t.Cleanup(func() {
		runDaemon(filepath.Join(dir, "stop.out"), "/usr/sbin/dovecot", "-c", d.conf(), "stop")
		Eventually(t, 10*time.Second, "dovecot stopped", func() bool {
			_, err := os.Stat(filepath.Join(dir, "run", "master.pid"))
			return err != nil
		}, nil)
	})
	waitListening(t, d.IMAPAddr(), "dovecot imap", d.Log)
	waitListening(t, d.LMTPAddr(), "dovecot lmtp", d.Log)
	return d
}

func (d *Dovecot) conf() string { return filepath.Join(d.Dir, "dovecot.conf") }

func (d *Dovecot) write(name, content string) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.Dir, name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// IMAPAddr, IMAPSAddr and LMTPAddr are the listeners' addresses.
func (d *Dovecot) IMAPAddr() string  { return fmt.Sprintf("127.0.0.1:%d", d.IMAPPort) }
func (d *Dovecot) IMAPSAddr() string { return fmt.Sprintf("127.0.0.1:%d", d.IMAPSPort) }
func (d *Dovecot) LMTPAddr() string  { return fmt.Sprintf("127.0.0.1:%d", d.LMTPPort) }

// Log returns the instance's log.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
	return string(b)
}

// Messages returns the messages in user's INBOX (new and cur), in file-name order.
func (d *Dovecot) Messages(user string) [][]byte {
	d.t.Helper()
	var out [][]byte
	box := filepath.Join(d.Dir, "mail", strings.ToLower(user))
	for _, sub := range []string{"cur", "new"} {
		files, _ := filepath.Glob(filepath.Join(box, sub, "*"))
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				d.t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// Flags returns the maildir flags of each message in user's folder ("" for INBOX, "Processed"),
// in file-name order: "S" for \Seen, "" for none (a message not yet looked at, in new/).
func (d *Dovecot) Flags(user, folder string) []string {
	d.t.Helper()
	box := filepath.Join(d.Dir, "mail", strings.ToLower(user))
	if folder != "" {
		box = filepath.Join(box, "."+folder)
	}
	var out []string
	for _, sub := range []string{"cur", "new"} {
		files, _ := filepath.Glob(filepath.Join(box, sub, "*"))
		sort.Strings(files)
		for _, f := range files {
			_, flags, _ := strings.Cut(filepath.Base(f), ":2,")
			out = append(out, flags)
		}
	}
	return out
}

// Kick disconnects user's IMAP sessions (doveadm kick).
func (d *Dovecot) Kick(user string) {
	d.t.Helper()
	if out, err := runDaemon(filepath.Join(d.Dir, "kick.out"), "/usr/bin/doveadm", "-c", d.conf(), "kick", user); err != nil {
		d.t.Fatalf("doveadm kick: %v\n%s", err, out)
	}
}

// Deliver delivers raw into user's INBOX through Dovecot's LMTP (with swaks), as mail arrives.
func (d *Dovecot) Deliver(user string, raw []byte) {
	d.t.Helper()
	f := filepath.Join(d.t.TempDir(), "message.eml")
	if err := os.WriteFile(f, raw, 0o644); err != nil {
		d.t.Fatal(err)
	}
	if out, code := Swaks(d.t, "--server", d.LMTPAddr(), "--protocol", "LMTP", "--from", "sender@elsewhere.example", "--to", user, "--data", "@"+f); code != 0 {
		d.t.Fatalf("deliver to %s: swaks exit %d\n%s", user, code, out)
	}
}
