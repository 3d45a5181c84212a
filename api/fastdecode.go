package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// fastDecoder is a request body with a decoder of its own for the common,
// well-formed case: exact keys, each given once; strings without escapes;
// whole numbers. decodeFast overwrites the value and reports true, or
// leaves it and reports false on anything else, and decodeBytes then
// decodes the body the strict way, which names the fault. So a body that
// decodeFast takes reads exactly as the strict way would read it, at a
// fraction of the cost (FuzzDecodeFast compares the two).
type fastDecoder interface {
	decodeFast(body []byte) bool
}

// decodeFast decodes a job request. Its payload aliases body.
func (req *jobRequest) decodeFast(body []byte) bool { return req.decodeFastOf(body, false) }

// decodeFastOf is decodeFast; valid says body is known to be valid JSON (a
// batch's item, checked once already), so its payload is not checked again.
func (req *jobRequest) decodeFastOf(body []byte, valid bool) bool {
	var r jobRequest
	l := lexer{b: body, valid: valid}
	ok := l.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return l.optString(&r.ID)
		case "run_at":
			return l.optString(&r.RunAt)
		case "delay":
			return l.optString(&r.Delay)
		case "payload":
			var ok bool
			r.Payload, ok = l.raw()
			return ok
		case "callback_url":
			return l.optString(&r.CallbackURL)
		case "method":
			return l.optString(&r.Method)
		case "headers":
			return l.stringMap(&r.Headers)
		case "max_attempts":
			return l.optInt(&r.MaxAttempts)
		case "timeout":
			return l.optString(&r.Timeout)
		case "backoff":
			return l.backoff(&r.Backoff)
		case "flow_key":
			return l.optString(&r.FlowKey)
		case "failure_url":
			return l.optString(&r.FailureURL)
		case "success_url":
			return l.optString(&r.SuccessURL)
		case "on_conflict":
			return l.optString(&r.OnConflict)
		case "max_delay":
			return l.optString(&r.MaxDelay)
		case "dedup_key":
			return l.optString(&r.DedupKey)
		case "dedup_window":
			return l.optString(&r.DedupWindow)
		case "expires_at":
			return l.optString(&r.ExpiresAt)
		case "ttl":
			return l.optString(&r.TTL)
		case "priority":
			return l.optInt(&r.Priority)
		case "labels":
			return l.stringMap(&r.Labels)
		}
		return false
	})
	if !ok || !l.end() {
		return false
	}
	*req = r
	return true
}

// backoff reads a backoff object or null.
func (l *lexer) backoff(dst **backoffRequest) bool {
	if l.null() {
		*dst = nil
		return true
	}
	b := new(backoffRequest)
	*dst = b
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "initial":
			return l.optString(&b.Initial)
		case "max":
			return l.optString(&b.Max)
		}
		return false
	})
}

// decodeFast decodes a batch's envelope. Its jobs alias body.
func (req *batchRequest) decodeFast(body []byte) bool {
	l := lexer{b: body}
	var jobs []json.RawMessage
	ok := l.object(func(key []byte) bool {
		if string(key) != "jobs" {
			return false
		}
		if l.null() {
			return true
		}
		jobs = []json.RawMessage{}
		return l.array(func() bool {
			v, ok := l.raw()
			jobs = append(jobs, v)
			return ok
		})
	})
	if !ok || !l.end() {
		return false
	}
	req.Jobs = jobs
	return true
}

// lexer reads JSON for the fast decoders. Each reading method skips the
// whitespace before what it reads and reports false when the input is
// not of the simple form it takes.
type lexer struct {
	b     []byte
	i     int
	strs  []string // backing for *string fields, allocated a few at a time
	valid bool     // b is known to be valid JSON: raw need not check what it reads
}

func (l *lexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// eat reads the byte c.
func (l *lexer) eat(c byte) bool {
	l.ws()
	if l.i < len(l.b) && l.b[l.i] == c {
		l.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (l *lexer) end() bool {
	l.ws()
	return l.i == len(l.b)
}

// null reads a null.
func (l *lexer) null() bool {
	l.ws()
	if bytes.HasPrefix(l.b[l.i:], []byte("null")) {
		l.i += 4
		return true
	}
	return false
}

// object reads an object, calling field with each key to read its value.
// A key given twice is refused: encoding/json would merge the values.
func (l *lexer) object(field func(key []byte) bool) bool {
	if !l.eat('{') {
		return false
	}
	if l.eat('}') {
		return true
	}
	seen := make([][]byte, 0, 16)
	for {
		key, ok := l.str()
		if !ok || !l.eat(':') || slices.ContainsFunc(seen, func(k []byte) bool { return bytes.Equal(k, key) }) {
			return false
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if l.eat('}') {
			return true
		}
		if !l.eat(',') {
			return false
		}
	}
}

// array reads an array, calling elem to read each element.
func (l *lexer) array(elem func() bool) bool {
	if !l.eat('[') {
		return false
	}
	if l.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if l.eat(']') {
			return true
		}
		if !l.eat(',') {
			return false
		}
	}
}

// str reads a string without escapes and returns its bytes, which must
// be UTF-8 (encoding/json would replace what is not).
func (l *lexer) str() ([]byte, bool) {
	if !l.eat('"') {
		return nil, false
	}
	start, ascii := l.i, true
	for ; l.i < len(l.b); l.i++ {
		switch c := l.b[l.i]; {
		case c == '"':
			s := l.b[start:l.i]
			l.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// optString reads a string or null into a *string field.
func (l *lexer) optString(dst **string) bool {
	if l.null() {
		*dst = nil
		return true
	}
	b, ok := l.str()
	if !ok {
		return false
	}
	if len(l.strs) == 0 {
		l.strs = make([]string, 8)
	}
	p := &l.strs[0]
	l.strs = l.strs[1:]
	*p = string(b)
	*dst = p
	return true
}

// stringMap reads an object of strings, or null.
func (l *lexer) stringMap(dst *map[string]string) bool {
	if l.null() {
		*dst = nil
		return true
	}
	m := map[string]string{}
	*dst = m
	return l.object(func(key []byte) bool {
		v, ok := l.str()
		m[string(key)] = string(v)
		return ok
	})
}

// optInt reads a whole number of at most 18 digits, or null, into an
// *int field. A fraction or exponent is left unread, for the caller to
// refuse.
func (l *lexer) optInt(dst **int) bool {
	if l.null() {
		*dst = nil
		return true
	}
	l.ws()
	neg := l.i < len(l.b) && l.b[l.i] == '-'
	if neg {
		l.i++
	}
	start, n := l.i, 0
	for ; l.i < len(l.b) && '0' <= l.b[l.i] && l.b[l.i] <= '9'; l.i++ {
		n = n*10 + int(l.b[l.i]-'0')
	}
	if d := l.i - start; d == 0 || d > 18 || (d > 1 && l.b[start] == '0') {
		return false
	}
	if neg {
		n = -n
	}
	*dst = &n
	return true
}

// raw reads any JSON value and returns its bytes.
func (l *lexer) raw() (json.RawMessage, bool) {
	l.ws()
	start, depth := l.i, 0
scan:
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case '"':
			if !l.skipString() {
				return nil, false
			}
			if depth == 0 {
				break scan
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				break scan
			}
			if depth--; depth == 0 {
				l.i++
				break scan
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				break scan
			}
		}
		l.i++
	}
	v := l.b[start:l.i]
	return v, l.valid || json.Valid(v)
}

// skipString moves past the string that starts at l.i.
func (l *lexer) skipString() bool {
	for l.i++; l.i < len(l.b); l.i++ {
		switch l.b[l.i] {
		case '\\':
			l.i++
		case '"':
			l.i++
			return true
		}
	}
	return false
}
