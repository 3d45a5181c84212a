package callback

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

// Errors that Verify wraps, with the name of the header that failed.
var (
	ErrMissingSignature = errors.New("missing signature")
	ErrInvalidSignature = errors.New("invalid signature")
	ErrTimestamp        = errors.New("timestamp outside tolerance")
)

// maxBodySize is the largest body VerifyRequest reads.
const maxBodySize = 10 << 20

// VerifyOptions tunes Verify. The zero value is ready to use.
type VerifyOptions struct {
	// Tolerance is how far webhook-timestamp may be from now, and the leeway
	// for the exp, nbf and iat claims of Kairos-Signature. Default 5m.
	Tolerance time.Duration
	// URL, if set, must equal the sub claim of Kairos-Signature: the URL
	// kairos called, as configured in the topic or job.
	URL string
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Verify checks both signatures of a kairos callback: the Standard Webhooks
// headers (webhook-id, webhook-timestamp, webhook-signature) and the
// Kairos-Signature JWT, each against any of secrets (pass the current and the
// next secret during a rotation). It returns nil only if both are valid for
// body. Failures wrap ErrMissingSignature, ErrInvalidSignature or
// ErrTimestamp and name the header that failed; a malformed secret is an
// error of its own.
func Verify(secrets []string, h http.Header, body []byte, opts VerifyOptions) error {
	if len(secrets) == 0 {
		return errors.New("verify: no secrets given")
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := secretBytes(s)
		if err != nil {
			return fmt.Errorf("verify: secret %d: %w", i, err)
		}
		keys[i] = k
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	for _, name := range [...]string{headerID, headerTimestamp, headerSignature, headerKairos} {
		if h.Get(name) == "" {
			return fmt.Errorf("%s header: %w", strings.ToLower(name), ErrMissingSignature)
		}
	}
	if err := verifyWebhook(keys, h, body, opts); err != nil {
		return err
	}
	if err := verifyToken(keys, h.Get(headerKairos), body, opts); err != nil {
		return fmt.Errorf("kairos-signature header: %w", err)
	}
	return nil
}

// verifyWebhook checks the Standard Webhooks headers, as the reference library does.
func verifyWebhook(keys [][]byte, h http.Header, body []byte, opts VerifyOptions) error {
	tsText := h.Get(headerTimestamp)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp header: not unix seconds: %w", ErrInvalidSignature)
	}
	now := opts.Now().Unix()
	tol := int64(opts.Tolerance / time.Second)
	if ts < now-tol || ts > now+tol {
		return fmt.Errorf("webhook-timestamp header: %ds from now, tolerance %v: %w", ts-now, opts.Tolerance, ErrTimestamp)
	}
	id := h.Get(headerID)
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
		for _, entry := range strings.Fields(h.Get(headerSignature)) {
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

// verifyToken checks the Kairos-Signature JWT.
func verifyToken(keys [][]byte, token string, body []byte, opts VerifyOptions) error {
	parserOpts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256"}),
		jwt.WithIssuer(issuer),
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
	_, err := jwt.NewParser(parserOpts...).ParseWithClaims(token, &c, func(*jwt.Token) (any, error) {
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

// VerifyRequest reads the body of r (at most 10 MiB; more is an
// *http.MaxBytesError), verifies it with Verify and returns it. It returns a
// nil body with any error. The caller still closes r.Body, as net/http does
// for server requests.
func VerifyRequest(r *http.Request, secrets []string, opts VerifyOptions) ([]byte, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodySize))
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
	}
	if err := Verify(secrets, r.Header, body, opts); err != nil {
		return nil, err
	}
	return body, nil
}
