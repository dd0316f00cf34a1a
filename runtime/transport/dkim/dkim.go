package dkim

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/personagen/personagen/runtime/service"
)

// DefaultHeaders are the header fields a Signer signs (RFC 6376 5.4.1's recommendation, for
// the fields runtime/mail's Render writes).
var DefaultHeaders = []string{
	"From", "Reply-To", "Subject", "Date", "To", "Cc", "Message-ID", "In-Reply-To", "References",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding", "Auto-Submitted",
}

// MinRSABits is the smallest RSA key a Signer accepts (RFC 8301: verifiers must not accept
// smaller ones).
const MinRSABits = 1024

// Options configure a Signer.
type Options struct {
	// Domain is the signing domain (d=), Selector the selector (s=) under which its public key is
	// published.
	Domain, Selector string
	// Key is the private key: an *rsa.PrivateKey (at least MinRSABits) or an
	// ed25519.PrivateKey. LoadKey reads one from PEM.
	Key crypto.Signer
	// Headers are the header fields to sign; nil means DefaultHeaders. It must name From.
	Headers []string
}

// Signer signs messages with one key. It is safe for concurrent use.
type Signer struct {
	opts dkim.SignOptions
}

// New returns a Signer as o says. Errors: no domain or selector, no key, a key of another kind
// or an RSA key shorter than MinRSABits, or Headers without From.
func New(o Options) (*Signer, error) {
	if o.Domain == "" || o.Selector == "" {
		return nil, errors.New("dkim: a signer needs a domain and a selector")
	}
	if strings.ContainsAny(o.Domain+o.Selector, " ;=\r\n\t") {
		return nil, fmt.Errorf("dkim: domain %q or selector %q has a space, ';' or '='", o.Domain, o.Selector)
	}
	switch k := o.Key.(type) {
	case *rsa.PrivateKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return nil, fmt.Errorf("dkim: RSA key of %d bits (at least %d, 2048 recommended)", n, MinRSABits)
		}
	case ed25519.PrivateKey:
	case nil:
		return nil, errors.New("dkim: a signer needs a key")
	default:
		return nil, fmt.Errorf("dkim: key of type %T (want RSA or Ed25519)", o.Key)
	}
	headers := o.Headers
	if headers == nil {
		headers = DefaultHeaders
	}
	opts := dkim.SignOptions{
		Domain: o.Domain, Selector: o.Selector, Signer: o.Key,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: append([]string(nil), headers...),
	}
	if _, err := dkim.NewSigner(&opts); err != nil { // checks the options
		return nil, err
	}
	return &Signer{opts: opts}, nil
}

// Sign returns raw (a whole message, CRLF line endings) with a DKIM-Signature header field in
// front; raw itself is not changed. Errors: a message whose header cannot be read.
func (s *Signer) Sign(raw []byte) ([]byte, error) {
	opts := s.opts
	signer, err := dkim.NewSigner(&opts)
	if err != nil {
		return nil, err
	}
	if _, err := signer.Write(raw); err != nil {
		signer.Close()
		return nil, fmt.Errorf("dkim: sign: %w", err)
	}
	if err := signer.Close(); err != nil {
		return nil, fmt.Errorf("dkim: sign: %w", err)
	}
	sig := signer.Signature()
	out := make([]byte, 0, len(sig)+len(raw))
	return append(append(out, sig...), raw...), nil
}

// Sender returns a service.Sender that signs each reply's Raw and hands it to next. A reply
// that cannot be signed is a permanent failure (signing it again fails the same way).
func (s *Signer) Sender(next service.Sender) service.Sender {
	return signingSender{s: s, next: next}
}

type signingSender struct {
	s    *Signer
	next service.Sender
}

func (ss signingSender) Send(ctx context.Context, m service.Outgoing) error {
	signed, err := ss.s.Sign(m.Raw)
	if err != nil {
		return service.Permanent(fmt.Errorf("dkim: reply %s: %w", m.MessageID, err))
	}
	m.Raw = signed
	return ss.next.Send(ctx, m)
}

// LoadKey reads a private key from PEM: PKCS#1 ("RSA PRIVATE KEY") or PKCS#8 ("PRIVATE KEY",
// RSA or Ed25519), as openssl genpkey writes them. Errors: no PEM block, a block of another
// type, or a key that does not parse.
func LoadKey(pemBytes []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("dkim: key: no PEM block")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("dkim: key: %w", err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("dkim: key: %w", err)
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("dkim: key: %T is no signing key", k)
		}
		return signer, nil
	}
	return nil, fmt.Errorf("dkim: key: PEM block %q (want RSA PRIVATE KEY or PRIVATE KEY)", block.Type)
}

// LoadKeyFile reads a private key from a PEM file (see LoadKey).
func LoadKeyFile(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dkim: %w", err)
	}
	k, err := LoadKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return k, nil
}

// PublicKeyRecord returns the DNS TXT record that publishes the public half of key at
// SELECTOR._domainkey.DOMAIN: "v=DKIM1; k=rsa; p=…" or "v=DKIM1; k=ed25519; p=…". Errors: a
// key of another kind.
func PublicKeyRecord(key crypto.Signer) (string, error) {
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + b64(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + b64(pub), nil
	}
	return "", fmt.Errorf("dkim: key of type %T (want RSA or Ed25519)", key)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
