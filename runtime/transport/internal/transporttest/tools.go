package transporttest

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Need returns path when the program is installed there; otherwise it skips the test, or fails
// it under CI=true.
func Need(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI=true: the mail servers are required; .ci/run installs them)", path)
		}
		t.Skipf("%s is not installed", path)
	}
	return path
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Cert is a self-signed certificate for 127.0.0.1 and localhost, with its files.
type Cert struct {
	TLS      tls.Certificate
	Pool     *x509.CertPool
	CertFile string
	KeyFile  string
}

// NewCert makes a Cert whose files are in dir (readable by every user, for servers that drop
// privileges).
func NewCert(t testing.TB, dir string) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	c := &Cert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), Pool: x509.NewCertPool()}
	for path, b := range map[string][]byte{c.CertFile: certPEM, c.KeyFile: keyPEM} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if c.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	c.Pool.AppendCertsFromPEM(certPEM)
	return c
}

// ServerTLS returns a server configuration with the certificate.
func (c *Cert) ServerTLS() *tls.Config { return &tls.Config{Certificates: []tls.Certificate{c.TLS}} }

// ClientTLS returns a client configuration that trusts the certificate.
func (c *Cert) ClientTLS() *tls.Config { return &tls.Config{RootCAs: c.Pool, ServerName: "127.0.0.1"} }

// Swaks runs swaks (the independent SMTP client) with args and returns its transcript and exit
// code (0: every step was answered as expected).
func Swaks(t testing.TB, args ...string) (transcript string, code int) {
	t.Helper()
	cmd := exec.Command(Need(t, "/usr/bin/swaks"), append([]string{"--timeout", "30"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("swaks: %v", err)
	}
	return out.String(), 0
}

// Replies returns the server's lines of a swaks transcript ("<-" and "<**" lines), without
// the arrows: "250 2.0.0 OK: queued".
func Replies(transcript string) []string {
	var out []string
	for _, line := range strings.Split(transcript, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"<~* ", "<** ", "<~  ", "<-  "} {
			if r, ok := strings.CutPrefix(line, p); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// dkimScript verifies the message on stdin with dkimpy; its key records come from the
// environment (DKIM_<selector>_<domain> = record). It prints one line per signature:
// "pass d=… s=… a=…" or "fail …".
const dkimScript = `
import os, sys, dkim
msg = sys.stdin.buffer.read()
def dnsfunc(name, timeout=5):
    name = name.decode() if isinstance(name, bytes) else name
    return os.environ.get("DKIM_" + name.rstrip(".").replace(".", "_").replace("-", "_"), "").encode()
d = dkim.DKIM(msg)
sigs = [v for (k, v) in d.headers if k.lower() == b"dkim-signature"]
for i in range(len(sigs)):
    try:
        ok = d.verify(idx=i, dnsfunc=dnsfunc)
    except dkim.DKIMException:
        ok = False
    tags = dkim.util.parse_tag_value(sigs[i].replace(b"\r\n", b""))
    print(("pass" if ok else "fail"), "d=" + tags[b"d"].decode(), "s=" + tags[b"s"].decode(), "a=" + tags[b"a"].decode())
`

// VerifyDKIM verifies each DKIM signature of raw with Debian's dkimpy (python3-dkim, run by
// /usr/bin/python3), answering key look-ups from records (name "selector._domainkey.domain" →
// TXT record) instead of DNS. It returns one line per signature, in header order: "pass
// d=acme.example s=rsa a=rsa-sha256" or "fail …".
func VerifyDKIM(t testing.TB, raw []byte, records map[string]string) []string {
	t.Helper()
	Need(t, "/usr/lib/python3/dist-packages/dkim/__init__.py")
	cmd := exec.Command(Need(t, "/usr/bin/python3"), "-c", dkimScript)
	cmd.Env = append(os.Environ(), "PYTHONPATH=")
	for name, rec := range records {
		cmd.Env = append(cmd.Env, "DKIM_"+strings.NewReplacer(".", "_", "-", "_").Replace(name)+"="+rec)
	}
	cmd.Stdin = bytes.NewReader(raw)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("dkimpy: %v\n%s", err, errOut.String())
	}
	if out.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// Child is a process of the test binary itself, running a part of the system (a listener, a
// receiver) that the test kills with SIGKILL at a chosen point.
type Child struct {
	cmd   *exec.Cmd
	lines chan string
	t     testing.TB
}

// ChildEnv is the variable that tells a test binary it runs as a Child, and in which role.
const ChildEnv = "TRANSPORTTEST_CHILD"

// StartChild runs the test binary again with ChildEnv=role and env added; the child's TestMain
// sees the role and runs it instead of the tests. Lines the child prints are read by WaitLine.
// The child is killed when the test ends, if it still runs.
func StartChild(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), ChildEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, lines: make(chan string, 100), t: t}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			c.lines <- s.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(c.Kill)
	return c
}

// WaitLine waits up to a minute for the child to print line.
func (c *Child) WaitLine(line string) {
	c.t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the child ended before it printed %q", line)
			}
			if l == line {
				return
			}
		case <-timeout:
			c.t.Fatalf("the child did not print %q within a minute", line)
		}
	}
}

// Kill kills the child with SIGKILL (by its process id) and waits for it to end.
func (c *Child) Kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
}
