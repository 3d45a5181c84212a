package api

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxPayloadDepth is how deeply a payload's arrays and objects may nest.
// Go's encoding/json stops at 10000 levels, Python's json module at about
// 1000 (its recursion limit), and some receivers far earlier; 128 is far
// past any real payload and well inside every common reader.
const MaxPayloadDepth = 128

// checkPayload refuses a payload (valid JSON) that kairos or a common
// receiver could not read back as it was sent: nesting deeper than
// MaxPayloadDepth; a string that is not UTF-8, or that escapes half of a
// UTF-16 surrogate pair (Go reads it as U+FFFD, Rust's serde and others
// refuse it); a number too large for a float64 (1e400: Go refuses it,
// JavaScript and Python read Infinity). It returns a message naming the
// rule, or "". It reads p once.
func checkPayload(p []byte) string {
	depth := 0
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '{', '[':
			if depth++; depth > MaxPayloadDepth {
				return fmt.Sprintf("nests arrays and objects deeper than %d levels (at byte %d); the limit is %d", MaxPayloadDepth, i, MaxPayloadDepth)
			}
			i++
		case '}', ']':
			depth--
			i++
		case '"':
			end, msg := checkString(p, i)
			if msg != "" {
				return msg
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			start, float := i, false
			for i < len(p) && isNumberByte(p[i]) {
				if p[i] == 'e' || p[i] == 'E' {
					float = true
				}
				i++
			}
			if float || i-start > 308 {
				if _, err := strconv.ParseFloat(string(p[start:i]), 64); err != nil && isRangeErr(err) && !underflow(p[start:i]) {
					return fmt.Sprintf("holds the number %.40s, too large for a 64-bit float (the largest is about 1.8e308): receivers read it as infinity or refuse it; send it as a string", p[start:i])
				}
			}
		default:
			i++
		}
	}
	return ""
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// underflow reports whether number n, out of range, is too small rather
// than too large (1e-400 reads as 0 everywhere, harmlessly).
func underflow(n []byte) bool {
	for i, c := range n {
		if c == 'e' || c == 'E' {
			return i+1 < len(n) && n[i+1] == '-'
		}
	}
	return false
}

// checkString checks the string that starts at p[i] ('"'), and returns the
// index after it.
func checkString(p []byte, i int) (int, string) {
	at := i
	for i++; i < len(p); {
		c := p[i]
		switch {
		case c == '"':
			return i + 1, ""
		case c == '\\':
			if i+1 < len(p) && p[i+1] == 'u' {
				r, ok := hex4(p, i+2)
				if !ok {
					return 0, fmt.Sprintf("holds a malformed \\u escape at byte %d", i)
				}
				i += 6
				switch {
				case 0xDC00 <= r && r <= 0xDFFF:
					return 0, fmt.Sprintf("holds the escape \\u%04X at byte %d, the second half of a UTF-16 surrogate pair without its first: a string must be valid Unicode", r, i-6)
				case 0xD800 <= r && r <= 0xDBFF:
					lo, ok := rune(0), i+1 < len(p) && p[i] == '\\' && p[i+1] == 'u'
					if ok {
						lo, ok = hex4(p, i+2)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return 0, fmt.Sprintf("holds the escape \\u%04X at byte %d, half of a UTF-16 surrogate pair without its second half: a string must be valid Unicode", r, i-6)
					}
					i += 6
				}
				continue
			}
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && n <= 1 {
				return 0, fmt.Sprintf("holds a string that is not valid UTF-8 (byte %d of the payload, in the string starting at byte %d)", i, at)
			}
			i += n
		}
	}
	return len(p), ""
}

// hex4 reads four hex digits at p[i:].
func hex4(p []byte, i int) (rune, bool) {
	if i+4 > len(p) {
		return 0, false
	}
	var r rune
	for _, c := range p[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
