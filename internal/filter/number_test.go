package filter

import (
	"encoding/json"
	"testing"
)

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"0", "-0", 0},
		{"0", "0.000e5", 0},
		{"-0.0", "0E-7", 0},
		{"1", "1.0", 0},
		{"1", "1e0", 0},
		{"1", "0.1e1", 0},
		{"100", "1E2", 0},
		{"100", "1e+2", 0},
		{"0.001", "1e-3", 0},
		{"123.456", "123456e-3", 0},
		{"10", "9", 1},
		{"9.99", "10", -1},
		{"0.5", "0.49999999999999999999999", 1},
		{"-1", "1", -1},
		{"-1", "0", -1},
		{"0", "-1", 1},
		{"0", "1e-400", -1},
		{"-2", "-1", -1},
		{"-1.5", "-1.25", -1},
		{"1.25", "1.5", -1},
		{"12", "120", -1},
		{"120", "12", 1},
		{"9007199254740993", "9007199254740992", 1},
		{"18446744073709551616", "18446744073709551615", 1},
		{"1e400", "1e399", 1},
		{"-1e400", "-1e399", -1},
		{"1e-400", "1e-399", -1},
		{"1e1000000000000000", "1e1000000000000001", 0}, // exponents saturate
		{"1e99999999999999999999", "2e99999999999999999999", -1},
	} {
		a, okA := parseDecimal(tc.a)
		b, okB := parseDecimal(tc.b)
		if !okA || !okB {
			t.Fatalf("parseDecimal(%q) or (%q) fails", tc.a, tc.b)
		}
		if got := compare(a, b); got != tc.want {
			t.Errorf("compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := compare(b, a); got != -tc.want {
			t.Errorf("compare(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestParseDecimalRefusesWhatJSONRefuses(t *testing.T) {
	for _, s := range []string{"", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x10", "1_000", "NaN", "Inf", "1 2", "--1", "1.2.3", "1ee2"} {
		if json.Valid([]byte(s)) {
			t.Fatalf("%q is valid JSON", s)
		}
		if d, ok := parseDecimal(s); ok {
			t.Errorf("parseDecimal(%q) = %+v, want false", s, d)
		}
	}
}
