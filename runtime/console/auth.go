package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// The environment variables AuthFromEnv reads.
const (
	// EnvToken holds a bearer token: a request carries it as "Authorization: Bearer TOKEN", or
	// (a browser) as the password of basic authentication, with any user name.
	EnvToken = "PERSONAGEN_CONSOLE_TOKEN"
	// EnvUser and EnvPassword hold basic-authentication credentials.
	EnvUser     = "PERSONAGEN_CONSOLE_USER"
	EnvPassword = "PERSONAGEN_CONSOLE_PASSWORD"
)

// minSecretLen is the shortest token or password Auth accepts.
const minSecretLen = 12

// ErrNoAuth is returned (wrapped) by New and AuthFromEnv when no credentials are configured: the
// console never serves without authentication.
var ErrNoAuth = errors.New("console: no credentials")

// Auth holds the credentials a request must present: a Token, or a User and Password (basic
// authentication), or both. Every comparison is in constant time.
type Auth struct {
	// Token is accepted as "Authorization: Bearer Token", or as the password of basic
	// authentication with any user name (the user name is then who acts).
	Token string
	// User and Password are basic-authentication credentials.
	User     string
	Password string
}

// AuthFromEnv reads Auth from PERSONAGEN_CONSOLE_TOKEN, PERSONAGEN_CONSOLE_USER and
// PERSONAGEN_CONSOLE_PASSWORD. Errors: ErrNoAuth (wrapped) when neither a token nor a user and
// password are set; an error naming the variable for a user without a password (or the
// reverse), or a token or password shorter than 12 characters.
func AuthFromEnv() (Auth, error) {
	a := Auth{Token: os.Getenv(EnvToken), User: os.Getenv(EnvUser), Password: os.Getenv(EnvPassword)}
	return a, a.check()
}

func (a Auth) check() error {
	switch {
	case a.Token == "" && a.User == "" && a.Password == "":
		return fmt.Errorf("%w: set %s, or %s and %s", ErrNoAuth, EnvToken, EnvUser, EnvPassword)
	case (a.User == "") != (a.Password == ""):
		return fmt.Errorf("console: set both %s and %s (one is empty)", EnvUser, EnvPassword)
	case a.Token != "" && len(a.Token) < minSecretLen:
		return fmt.Errorf("console: %s is %d characters long; use at least %d", EnvToken, len(a.Token), minSecretLen)
	case a.Password != "" && len(a.Password) < minSecretLen:
		return fmt.Errorf("console: %s is %d characters long; use at least %d", EnvPassword, len(a.Password), minSecretLen)
	case strings.ContainsAny(a.User, ":\r\n"):
		return fmt.Errorf("console: %s may not hold a colon or a line break", EnvUser)
	}
	return nil
}

// equal compares a and b in constant time (of their digests, so their lengths leak nothing).
func equal(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// identify returns who r authenticates as ("token" for a bearer token, the user name of basic
// authentication), or ok false. Both credentials are always compared, so the time taken does
// not say which one failed.
func (a Auth) identify(r *http.Request) (who string, ok bool) {
	h := r.Header.Get("Authorization")
	if tok, found := strings.CutPrefix(h, "Bearer "); found {
		good := a.Token != "" && equal(tok, a.Token)
		return "token", good
	}
	user, pass, basic := r.BasicAuth()
	if !basic {
		return "", false
	}
	byPassword := a.User != "" && equal(user, a.User) && equal(pass, a.Password)
	byToken := a.Token != "" && equal(pass, a.Token)
	if !byPassword && !byToken {
		return "", false
	}
	if user == "" {
		user = "token"
	}
	return user, true
}

// csrfKey is the key of the CSRF tokens: derived from the credentials, so every replica with
// the same credentials issues and accepts the same tokens, and changing them voids the old ones.
func (a Auth) csrfKey() []byte {
	k := sha256.Sum256([]byte("personagen console csrf\x00" + a.Token + "\x00" + a.User + "\x00" + a.Password))
	return k[:]
}

// csrfToken is the token the forms of who carry.
func (a Auth) csrfToken(who string) string {
	m := hmac.New(sha256.New, a.csrfKey())
	m.Write([]byte(who))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCSRF reports whether token is who's.
func (a Auth) validCSRF(who, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(a.csrfToken(who)))
}
