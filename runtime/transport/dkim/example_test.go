package dkim_test

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime/transport/dkim"
)

// The DNS record to publish at SELECTOR._domainkey.DOMAIN for a key.
func ExamplePublicKeyRecord() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // use a real key: openssl genpkey -algorithm ed25519
	rec, err := dkim.PublicKeyRecord(key)
	if err != nil {
		panic(err)
	}
	fmt.Println(rec)
	s, err := dkim.New(dkim.Options{Domain: "acme.example", Selector: "ed2026", Key: key})
	if err != nil {
		panic(err)
	}
	signed, err := s.Sign([]byte("From: support@acme.example\r\nTo: ann@cust.example\r\nSubject: hi\r\n\r\nHello.\r\n"))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(string(signed), "DKIM-Signature: a=ed25519-sha256; bh="))
	// Output:
	// v=DKIM1; k=ed25519; p=O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=
	// true
}
