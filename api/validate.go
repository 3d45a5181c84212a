package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/duration"
)

// Rules for names and values, stated in errors and in openapi.yaml. The
// names' patterns there, ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ for topics and
// ^[A-Za-z0-9][A-Za-z0-9._:~@-]{0,127}$ for ids, are checked by validName
// (FuzzValidName holds the two to each other).
const (
	topicRule = "use 1-64 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"
	idRule    = "use 1-128 characters: letters, digits, '.', '_', ':', '~', '@' or '-', starting with a letter or digit"

	maxPast        = 24 * time.Hour           // run_at may be this far in the past (it fires at once)
	maxFuture      = 5 * 365 * 24 * time.Hour // and this far in the future
	minTimeout     = 100 * time.Millisecond
	maxTimeout     = 15 * time.Minute
	maxAttemptsCap = 100
	minBackoff     = 10 * time.Millisecond
	maxBackoff     = 7 * 24 * time.Hour
	maxConcurrency = 1000
	// flow control (topics' rate, parallelism and flow_key)
	maxRateLimit   = 1_000_000
	minRatePeriod  = time.Second
	maxRatePeriod  = 24 * time.Hour
	maxParallelism = 10_000
	maxFlowKey     = 128
	// circuit breaker
	maxBreakerFailures     = 1000
	defaultBreakerCooldown = 10 * time.Second
	maxHeaders             = 50
	maxHeaderValue         = 4096
	maxHeaderName          = 256
)

var allowedMethods = []string{"POST", "PUT", "PATCH", "DELETE", "GET"}

// reservedHeaders are set by kairos on every callback and cannot be overridden.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Webhook-Id": true, "Webhook-Timestamp": true, "Webhook-Signature": true,
}

func validTopic(name string) bool { return validName(name, 64, "._-") }
func validID(id string) bool      { return validName(id, 128, "._:~@-") }

// validName reports whether s is 1 to max bytes, a letter or digit first,
// then letters, digits or bytes of extra: a hand-written match of the
// patterns, which a regexp made a tenth of a batch create's time.
func validName(s string, max int, extra string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkURL validates a callback URL field: its syntax and, unless
// allowPrivate, that its host is no literal private address or localhost
// (callback.CheckTarget; names are checked when the callback is dialled).
func checkURL(fe *fieldErrors, field, raw string, allowPrivate bool) {
	err := callback.CheckURL(raw)
	if err == nil && strings.Contains(raw, headerMask) {
		err = errors.New("the URL holds the mask kairos shows in place of a query value: send the URL itself (GET with ?reveal=headers to read it)")
	}
	if err == nil && !allowPrivate {
		err = callback.CheckTarget(raw)
	}
	if err != nil {
		fe.add(field, "%v", err)
	}
}

// checkMethod validates and normalises an HTTP method.
func checkMethod(fe *fieldErrors, field, m string) string {
	up := asciiUpper(m)
	for _, a := range allowedMethods {
		if up == a {
			return up
		}
	}
	fe.add(field, "method %q is not allowed: use one of %s", m, strings.Join(allowedMethods, ", "))
	return ""
}

// validHeaderName reports whether name is an HTTP field name: one or more
// token characters (RFC 9110, 5.1). It is x/net's httpguts rule, written
// here so that kairos does not build golang.org/x/net and x/text for it
// (FuzzValidHeader holds the two to each other).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v may be sent as an HTTP field value:
// no control characters but horizontal tab (so no line breaks), no DEL.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// refusedHeader says why a callback header of canonical name canon may not
// be set by a tenant, or "" when it may: kairos sets it on every callback
// (reservedHeaders, Kairos-*), or it speaks to a proxy on the way
// (Proxy-*): behind KAIROS_CALLBACK_PROXY a tenant would pick the proxy's
// identity (Proxy-Authorization). It is the one rule of topics', jobs' and
// schedules' headers (checkHeaders).
func refusedHeader(canon string) string {
	switch {
	case reservedHeaders[canon] || strings.HasPrefix(canon, "Kairos-"):
		return "header " + canon + " is set by kairos and cannot be overridden"
	case strings.HasPrefix(canon, "Proxy-"):
		return "header " + canon + " is refused: Proxy-* headers speak to a proxy between kairos and the receiver, which is the operator's (KAIROS_CALLBACK_PROXY); send the receiver's credentials in Authorization or a header of its own"
	}
	return ""
}

// checkHeaders validates callback headers and canonicalises their names.
// When every name is canonical already, it returns h itself.
func checkHeaders(fe *fieldErrors, field string, h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	if len(h) > maxHeaders {
		fe.add(field, "at most %d headers are allowed, got %d", maxHeaders, len(h))
		return nil
	}
	var out map[string]string // nil while h can be kept as it is
	for name := range h {
		if http.CanonicalHeaderKey(name) != name {
			out = make(map[string]string, len(h))
			break
		}
	}
	for name, v := range h {
		if len(name) > maxHeaderName {
			// named by its start: the field would repeat the whole name
			fe.add(field, "a header name is %d bytes, longer than the %d allowed: %q...", len(name), maxHeaderName, name[:32])
			continue
		}
		bad := func(format string, args ...any) { fe.add(field+"."+name, format, args...) }
		if !validHeaderName(name) {
			bad("%q is not a valid HTTP header name", name)
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if why := refusedHeader(canon); why != "" {
			bad("%s", why)
			continue
		}
		if !validHeaderValue(v) {
			bad("the value is not a valid HTTP header value (no control characters or line breaks)")
			continue
		}
		if len(v) > maxHeaderValue {
			bad("the value is longer than %d bytes", maxHeaderValue)
			continue
		}
		if v == headerMask {
			bad("the value is the mask kairos shows in place of a secret header's value: send the value itself (GET the topic or job with ?reveal=headers to read it)")
			continue
		}
		if out == nil {
			continue
		}
		if _, dup := out[canon]; dup {
			bad("header %s is given twice (names are case-insensitive)", canon)
			continue
		}
		out[canon] = v
	}
	if out == nil {
		return h
	}
	return out
}

// asciiUpper upper-cases ASCII letters only: strings.ToUpper would turn
// "poſt" into "POST".
func asciiUpper(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'a' <= r && r <= 'z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// parseDuration parses a duration (Go syntax plus days, duration.Parse)
// within [lo, hi].
func parseDuration(fe *fieldErrors, field, s string, lo, hi time.Duration) time.Duration {
	d, ok := parseAnyDuration(fe, field, s)
	if !ok {
		return 0
	}
	if d < lo || d > hi {
		fe.add(field, "%s is out of range: allowed %s to %s", s, fmtDuration(lo), fmtDuration(hi))
		return 0
	}
	return d
}

// parseAnyDuration parses s as a duration of any length; false, with an
// error on field, when it is none.
func parseAnyDuration(fe *fieldErrors, field, s string) (time.Duration, bool) {
	d, err := duration.Parse(s)
	if err != nil {
		fe.add(field, "%q is not a duration: use Go syntax such as \"90s\", \"1.5h\" or \"250ms\", or days such as \"7d\" or \"1d12h\"", s)
		return 0, false
	}
	return d, true
}

// parseRunAt parses an RFC 3339 time within the allowed window around now,
// to millisecond precision: a finer time is rounded up (ceilMS), so that
// nothing fires before the instant asked for.
func parseRunAt(fe *fieldErrors, field, s string, now time.Time) time.Time {
	return parseTime(fe, field, s, now, ceilMS)
}

// parseTime parses an RFC 3339 time, rounds it to a millisecond with
// round, and checks that it is within the allowed window around now.
func parseTime(fe *fieldErrors, field, s string, now time.Time, round func(time.Time) time.Time) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || strings.ContainsRune(s, ',') { // Go also takes ISO 8601's decimal comma; RFC 3339 does not
		fe.add(field, "%q is not an RFC 3339 time such as \"2026-11-21T10:30:00.250Z\"", s)
		return time.Time{}
	}
	t = round(t)
	switch {
	case t.Before(now.Add(-maxPast)):
		fe.add(field, "%s is more than %s in the past", s, fmtDuration(maxPast))
		return time.Time{}
	case t.After(now.Add(maxFuture)):
		fe.add(field, "%s is more than %s in the future", s, fmtDuration(maxFuture))
		return time.Time{}
	}
	return t.UTC()
}

// fmtDuration writes a bound as errors state it: whole days as "7d".
func fmtDuration(d time.Duration) string { return duration.Format(d) }

// ceilMS rounds t up to a whole millisecond: times are stored in ms, and a
// job must never fire before the instant asked for (…52.522490Z is kept
// as …52.523Z).
func ceilMS(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); r.Before(t) {
		return r.Add(time.Millisecond)
	}
	return t
}

// floorMS rounds t down to a whole millisecond (a bound that must not be
// passed, such as a schedule's end_at).
func floorMS(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// formatTime writes times as RFC 3339 UTC with milliseconds.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.Format(timeLayout)
	}
	// by hand: time.Format took a tenth of a batch create's CPU (three
	// times a job); FuzzFormatTime holds the two to each other
	h, mi, sec := t.Clock()
	var b [24]byte
	put := func(at, v, digits int) {
		for k := digits - 1; k >= 0; k-- {
			b[at+k] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, y, 4)
	put(5, int(mo), 2)
	put(8, d, 2)
	put(11, h, 2)
	put(14, mi, 2)
	put(17, sec, 2)
	put(20, t.Nanosecond()/1e6, 3)
	b[4], b[7], b[10], b[13], b[16], b[19], b[23] = '-', '-', 'T', ':', ':', '.', 'Z'
	return string(b[:])
}

// timeLayout is how times are shown: RFC 3339 in UTC, with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"
