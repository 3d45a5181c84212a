package callback

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/redact"
)

// MaxResponseHeaderBytes bounds the headers of a receiver's answer (status
// line included): an answer with more is not read, and its attempt fails
// with an error, as a connection error does.
const MaxResponseHeaderBytes = 64 << 10

const (
	defaultTimeout = 30 * time.Second
	defaultRead    = 512
	drainLen       = 64 << 10
)

// NoBody is a Request.Read that reads none of the answer's body.
const NoBody = -1

// Request is one callback attempt.
type Request struct {
	Method  string        // default POST
	URL     string        // absolute http or https URL
	Header  http.Header   // sent as is, signatures included; may be nil. Fire sends this map itself: leave it unchanged until Fire returns
	Body    []byte        // sent as is
	Timeout time.Duration // for the whole attempt, body read included; default 30s
	// Read is how many bytes of the answer's body Fire keeps in
	// Result.Body: 0 is 512, NoBody none.
	Read int
}

// Result is the outcome of one attempt.
type Result struct {
	Status   int           // HTTP status; 0 if no response arrived
	Duration time.Duration // from sending to the response headers, or to the error
	Err      error         // why no response arrived: timeout, refused, reset, ...
	Body     []byte        // the start of the response body, as sent, up to Request.Read bytes
	// Header holds the response's kairos.KeptHeaders that it had
	// (kairos.ResponseHeaders); nil when none.
	Header map[string]string
	// RetryAfter is the wait asked for by a 429 or 503 response, when
	// HasRetryAfter says it gave one (see the RetryAfter func).
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Permanent is true when retrying cannot succeed: the receiver
	// answered 410 Gone, which Standard Webhooks defines as "stop calling
	// me". A target the address policy refused (Err is then a
	// *BlockedAddressError) is not: it is retried with backoff like a
	// connection error, so that a process started with the setting that
	// allows it (KAIROS_ALLOW_PRIVATE_URLS) delivers the job.
	Permanent bool
}

// OK reports whether the attempt delivered the callback: a 2xx response.
func (r Result) OK() bool {
	return r.Err == nil && r.Status >= 200 && r.Status <= 299
}

// Client fires callback attempts. It is safe for concurrent use. It makes
// exactly one request per Fire: retries belong to the job, not to the client.
type Client struct {
	rc *retryablehttp.Client
}

// NewClient returns a Client whose connections go through
// NewTransport(allowPrivate) and which does not follow redirects: a 3xx is
// an ordinary non-2xx result. logger, if not nil, gets the HTTP library's own
// messages at debug level (Fire's caller logs the outcomes).
func NewClient(allowPrivate bool, logger *slog.Logger) *Client {
	return NewEgressClient(Egress{AllowPrivate: allowPrivate}, logger)
}

// NewEgressClient is NewClient with its connections going through
// e.Transport(): a proxy, extra roots, the address rule.
func NewEgressClient(e Egress, logger *slog.Logger) *Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{
		// Hide CloseIdleConnections: retryablehttp calls it after every failed
		// request, which would drop the pooled connections to all other hosts.
		Transport: struct{ http.RoundTripper }{e.Transport()},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	rc.RetryMax = 0
	rc.CheckRetry = func(context.Context, *http.Response, error) (bool, error) { return false, nil }
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.Logger = nil
	if logger != nil {
		rc.Logger = debugLogger{logger}
	}
	return &Client{rc: rc}
}

// Fire sends req once and reports the result; it does not return an error
// of its own and does not panic on bad input (a bad URL or method is an Err).
// The attempt ends at req.Timeout or when ctx is done. It reads at most
// req.Read bytes of the response body for Result.Body and discards at most
// 64 KiB more, so that a large response costs little; errors while reading
// the body are ignored, since the status has already decided the outcome.
func (c *Client) Fire(ctx context.Context, req Request) Result {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body any // nil, not an empty []byte: no body at all
	if len(req.Body) > 0 {
		body = req.Body
	}
	r, err := retryablehttp.NewRequestWithContext(actx, method, req.URL, body)
	if err != nil {
		return Result{Err: fmt.Errorf("build request: %w", unwrapURL(err))}
	}
	if req.Header != nil {
		// the caller's map, not a copy: net/http copies it again anyway,
		// for redirects, and a copy here was a good share of a callback's
		// bytes allocated (BenchmarkWorkerDeliver; docs/performance.md)
		r.Header = req.Header
	}

	start := time.Now()
	resp, err := c.rc.Do(r)
	res := Result{Duration: time.Since(start)}
	if err != nil {
		res.Err = describe(ctx, err, timeout)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	switch res.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		res.RetryAfter, res.HasRetryAfter = RetryAfter(resp.Header, time.Now())
	case http.StatusGone:
		res.Permanent = true
	}
	res.Header = kairos.ResponseHeaders(resp.Header, resp.ContentLength)
	res.Body = readBody(resp.Body, cmp.Or(req.Read, defaultRead))
	_, _ = io.CopyN(io.Discard, resp.Body, drainLen)
	return res
}

// readBody reads up to n bytes of r; nil for n <= 0 or an empty body. A
// small n is read into a buffer of its size; a large one grows as the body
// comes, so that a short answer to a job that may keep 64 KiB costs its
// own size.
func readBody(r io.Reader, n int) []byte {
	if n <= 0 {
		return nil
	}
	if n <= defaultRead {
		buf := make([]byte, n)
		k, _ := io.ReadFull(r, buf)
		if k == 0 {
			return nil
		}
		return buf[:k]
	}
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	if len(b) == 0 {
		return nil
	}
	return b
}

// Snippet returns the first n bytes of the response body as valid UTF-8:
// a rune cut off at the end is dropped and other invalid bytes become '?'.
func (r Result) Snippet(n int) string {
	return validUTF8(r.Body[:min(n, len(r.Body))])
}

// attemptError gives a transport error a short message and keeps it for errors.Is/As.
type attemptError struct {
	msg string
	err error
}

func (e *attemptError) Error() string { return e.msg }
func (e *attemptError) Unwrap() error { return e.err }

// describe turns a transport error into one a person can read at a glance.
// The URL is left out: the caller knows it, and it may carry a token.
func describe(ctx context.Context, err error, timeout time.Duration) error {
	var (
		blocked *BlockedAddressError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.As(err, &blocked):
		return blocked
	case ctx.Err() != nil:
		return &attemptError{"attempt abandoned: " + context.Cause(ctx).Error(), err}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &attemptError{fmt.Sprintf("timeout after %v", timeout), err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &attemptError{"connection refused", err}
	case errors.Is(err, syscall.ECONNRESET):
		return &attemptError{"connection reset by peer", err}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &attemptError{"connection closed before a response", err}
	case strings.Contains(err.Error(), "response headers exceeded"), strings.Contains(err.Error(), "header list larger than"):
		return &attemptError{fmt.Sprintf("the answer's headers exceed %d KiB: not read", MaxResponseHeaderBytes>>10), err}
	case errors.As(err, &dnsErr):
		msg := "dns lookup of " + dnsErr.Name + ": " + dnsErr.Err
		if dnsErr.IsNotFound {
			msg = "dns lookup of " + dnsErr.Name + ": no such host"
		}
		return &attemptError{msg, err}
	}
	return unwrapURL(err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// validUTF8 returns b as valid UTF-8 of at most len(b) bytes: a rune cut
// off at the end is dropped and other invalid bytes become '?'.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	// Drop a truncated rune at the end (at most utf8.UTFMax-1 bytes).
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				b = b[:len(b)-i]
			}
			break
		}
	}
	return strings.ToValidUTF8(string(b), "?")
}

// debugLogger passes retryablehttp's messages to slog at debug level, so
// that each failed attempt is logged once, by whoever handles its Result.
// retryablehttp logs whole URLs (and errors that repeat them): their
// queries and user info are redacted first, whatever handler the logger has.
type debugLogger struct{ l *slog.Logger }

func (d debugLogger) Error(msg string, kv ...any) { d.debug(msg, kv) }
func (d debugLogger) Warn(msg string, kv ...any)  { d.debug(msg, kv) }
func (d debugLogger) Info(msg string, kv ...any)  { d.debug(msg, kv) }
func (d debugLogger) Debug(msg string, kv ...any) { d.debug(msg, kv) }

func (d debugLogger) debug(msg string, kv []any) {
	if !d.l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	for i, v := range kv {
		kv[i] = redact.Value(v)
	}
	d.l.Debug(redact.String(msg), kv...)
}
