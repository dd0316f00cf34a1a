// Package dkim signs a persona's outgoing replies with DKIM (RFC 6376; Ed25519 keys per RFC
// 8463), on github.com/emersion/go-msgauth: a Signer prepends a DKIM-Signature to a rendered
// message, and Signer.Sender wraps any service.Sender so every reply it sends is signed.
//
// Start from New with the domain, selector and key (LoadKeyFile), then wrap the sender with
// Signer.Sender; PublicKeyRecord gives the DNS record to publish.
//
// Canonicalization is relaxed/relaxed (header case and folding and trailing white space may
// change in transit, as relays do), the hash SHA-256, and the signed header fields those of
// DefaultHeaders that a reply has; naming the absent ones too means one added in transit breaks
// the signature. The signature's d= is the configured domain, which must be the domain of the
// persona's From (or a parent of it) for DMARC alignment; the public key is published at
// SELECTOR._domainkey.DOMAIN as a TXT record "v=DKIM1; k=rsa; p=…" (or k=ed25519). Ed25519
// signatures are not verified by every receiver yet: sign with an RSA key (2048 bits) too by
// wrapping twice (each Signer adds its own signature).
//
// go-msgauth is used rather than go-mail's signer: it signs any bytes as a stream (go-mail's
// signs the messages go-mail builds, and a reply here is rendered by runtime/mail), it is the
// signer and verifier of the maddy mail server, and its verifier checks the tests' signatures
// alongside an independent one (dkimpy).
package dkim
