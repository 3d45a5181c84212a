// Package verify is what a receiver of kairos callbacks imports to check
// them: both signatures every callback carries, the Standard Webhooks
// headers (webhook-id, webhook-timestamp, webhook-signature; secrets shown
// as whsec_…) and Kairos-Signature, an HS256 JWT that binds the URL kairos
// called and the SHA-256 of the body.
//
// It imports only the standard library and github.com/golang-jwt/jwt/v5,
// so a receiver pays for nothing of the server (no Redis client, no
// tracing exporter). kairos signs in package callback, which shares this
// package's header names and secret format.
package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Header names of the two signatures, in canonical form.
const (
	HeaderID        = "Webhook-Id"        // stable across the retries of one job: deduplicate on it
	HeaderTimestamp = "Webhook-Timestamp" // unix seconds of the signing
	HeaderSignature = "Webhook-Signature" // space-separated "v1,<base64 HMAC-SHA256>" entries
	HeaderKairos    = "Kairos-Signature"  // the JWT over the URL and body hash
)

const (
	// SecretPrefix starts every signing secret kairos shows.
	SecretPrefix = "whsec_"
	// Issuer is the iss claim of Kairos-Signature.
	Issuer = "kairos"
	// DefaultTolerance is Options.Tolerance when it is left zero.
	DefaultTolerance = 5 * time.Minute
	// MaxBodySize is the largest body Request reads.
	MaxBodySize = 10 << 20
)

// Errors that Callback and Request wrap, with the name of the header that failed.
var (
	ErrMissingSignature = errors.New("missing signature")
	ErrInvalidSignature = errors.New("invalid signature")
	ErrTimestamp        = errors.New("timestamp outside tolerance")
)

// SecretKey returns the HMAC key of a "whsec_..." signing secret: the
// standard base64 after the prefix (the prefix is optional). It fails on
// a secret that is empty or not base64.
func SecretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, errors.New("malformed signing secret: want whsec_ and standard base64")
	}
	if len(key) == 0 {
		return nil, errors.New("empty signing secret")
	}
	return key, nil
}

// Options tunes Callback and Request. The zero value is ready to use.
type Options struct {
	// Tolerance is how far webhook-timestamp may be from now, and the leeway
	// for the exp, nbf and iat claims of Kairos-Signature. Default 5m.
	Tolerance time.Duration
	// URL, if set, must equal the sub claim of Kairos-Signature: the URL
	// kairos called, as configured in the topic or job.
	URL string
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Callback checks both signatures of a kairos callback: the Standard
// Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) and
// the Kairos-Signature JWT, each against any of secrets (pass the current
// and the next secret during a rotation). It returns nil only if both are
// valid for body, the raw bytes received. Failures wrap
// ErrMissingSignature, ErrInvalidSignature or ErrTimestamp and name the
// header that failed; a malformed secret is an error of its own.
func Callback(secrets []string, h http.Header, body []byte, opts Options) error {
	if len(secrets) == 0 {
		return errors.New("verify: no secrets given")
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := SecretKey(s)
		if err != nil {
			return fmt.Errorf("verify: secret %d: %w", i, err)
		}
		keys[i] = k
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = DefaultTolerance
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	for _, name := range [...]string{HeaderID, HeaderTimestamp, HeaderSignature, HeaderKairos} {
		if h.Get(name) == "" {
			return fmt.Errorf("%s header: %w", strings.ToLower(name), ErrMissingSignature)
		}
	}
	if err := webhook(keys, h, body, opts); err != nil {
		return err
	}
	if err := token(keys, h.Get(HeaderKairos), body, opts); err != nil {
		return fmt.Errorf("kairos-signature header: %w", err)
	}
	return nil
}

// webhook checks the Standard Webhooks headers, as the reference library does.
func webhook(keys [][]byte, h http.Header, body []byte, opts Options) error {
	tsText := h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp header: not unix seconds: %w", ErrInvalidSignature)
	}
	now := opts.Now().Unix()
	tol := int64(opts.Tolerance / time.Second)
	if ts < now-tol || ts > now+tol {
		return fmt.Errorf("webhook-timestamp header: %ds from now, tolerance %v: %w", ts-now, opts.Tolerance, ErrTimestamp)
	}
	id := h.Get(HeaderID)
	var sum [sha256.Size]byte
	var want [44]byte // base64 of a SHA-256 sum
	for _, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(tsText))
		mac.Write([]byte{'.'})
		mac.Write(body)
		base64.StdEncoding.Encode(want[:], mac.Sum(sum[:0]))
		for _, entry := range strings.Fields(h.Get(HeaderSignature)) {
			version, got, ok := strings.Cut(entry, ",")
			if ok && version == "v1" && hmac.Equal([]byte(got), want[:]) {
				return nil
			}
		}
	}
	return fmt.Errorf("webhook-signature header: no v1 signature matches: %w", ErrInvalidSignature)
}

// tokenClaims are the claims of Kairos-Signature as a receiver reads them.
type tokenClaims struct {
	jwt.RegisteredClaims
	Body string `json:"body"`
}

// token checks the Kairos-Signature JWT.
func token(keys [][]byte, tok string, body []byte, opts Options) error {
	parserOpts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256"}),
		jwt.WithIssuer(Issuer),
		jwt.WithLeeway(opts.Tolerance),
		jwt.WithTimeFunc(opts.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if opts.URL != "" {
		parserOpts = append(parserOpts, jwt.WithSubject(opts.URL))
	}
	set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, len(keys))}
	for i, k := range keys {
		set.Keys[i] = k
	}
	var c tokenClaims
	_, err := jwt.NewParser(parserOpts...).ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) {
		return set, nil
	})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenNotValidYet),
		errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return fmt.Errorf("%w: %w", ErrTimestamp, err)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrInvalidSignature, err)
	}
	sum := sha256.Sum256(body)
	var want [43]byte // unpadded base64url of a SHA-256 sum
	base64.RawURLEncoding.Encode(want[:], sum[:])
	if subtle.ConstantTimeCompare([]byte(c.Body), want[:]) != 1 {
		return fmt.Errorf("body claim does not match the body: %w", ErrInvalidSignature)
	}
	return nil
}

// Request reads the body of r (at most MaxBodySize, 10 MiB; more is an
// *http.MaxBytesError), checks it with Callback and returns it. It returns
// a nil body with any error. The caller still closes r.Body, as net/http
// does for server requests.
func Request(r *http.Request, secrets []string, opts Options) ([]byte, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBodySize))
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
	}
	if err := Callback(secrets, r.Header, body, opts); err != nil {
		return nil, err
	}
	return body, nil
}
