package filter

import (
	"encoding/json"
	"math"
	"strconv"
)

// A decimal is the exact value of a JSON number: 0.D × 10^exp, where the
// significant digits D are hi followed by lo, with no leading or trailing
// zero. Zero has no digits and is never negative. hi and lo are parts of the
// number's text, so parsing one allocates nothing.
type decimal struct {
	neg    bool
	hi, lo string
	exp    int64
}

// maxExp bounds the exponents parseDecimal reads: larger ones count as it,
// so that numbers beyond 1e±1000000000000000 compare as equal to one another.
const maxExp = 1e15

// parseDecimal parses s, which must follow JSON's grammar for numbers.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	whole := s[start:i]
	if whole == "" || (whole[0] == '0' && len(whole) > 1) {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if frac = s[start:i]; frac == "" {
			return decimal{}, false
		}
	}
	var x int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		start = i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if x < maxExp {
				x = x*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return decimal{}, false
		}
		x = min(x, maxExp)
		if neg {
			x = -x
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	// The digits are whole then frac; lead counts the zeros they start with,
	// end is where the significant ones stop.
	n := len(whole) + len(frac)
	at := func(i int) byte {
		if i < len(whole) {
			return whole[i]
		}
		return frac[i-len(whole)]
	}
	lead := 0
	for lead < n && at(lead) == '0' {
		lead++
	}
	if lead == n {
		return decimal{}, true
	}
	end := n
	for at(end-1) == '0' {
		end--
	}
	w := len(whole)
	if lead < w {
		d.hi = whole[lead:min(end, w)]
	}
	if end > w {
		d.lo = frac[max(lead, w)-w : end-w]
	}
	d.exp = int64(w-lead) + x
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (d decimal) zero() bool { return d.hi == "" && d.lo == "" }

func (d decimal) digit(i int) byte {
	if i < len(d.hi) {
		return d.hi[i]
	}
	return d.lo[i-len(d.hi)]
}

// compare returns -1, 0 or +1 as a is less than, equal to or greater than b.
func compare(a, b decimal) int {
	switch {
	case a.zero() && b.zero():
		return 0
	case a.zero():
		return sign(!b.neg)
	case b.zero(), a.neg != b.neg:
		return sign(a.neg)
	}
	m := 0
	if a.exp != b.exp {
		m = sign(a.exp < b.exp)
	} else {
		na, nb := len(a.hi)+len(a.lo), len(b.hi)+len(b.lo)
		for i := 0; i < min(na, nb) && m == 0; i++ {
			if da, db := a.digit(i), b.digit(i); da != db {
				m = sign(da < db)
			}
		}
		if m == 0 && na != nb {
			m = sign(na < nb)
		}
	}
	if a.neg {
		return -m
	}
	return m
}

// sign returns -1 if less, else +1.
func sign(less bool) int {
	if less {
		return -1
	}
	return 1
}

// number returns the value of a document's number, a json.Number or a
// float64 (NaN and the infinities are not numbers here).
func number(v any) (decimal, bool) {
	switch n := v.(type) {
	case json.Number:
		return parseDecimal(string(n))
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return decimal{}, false
		}
		return parseDecimal(strconv.FormatFloat(n, 'g', -1, 64))
	}
	return decimal{}, false
}
