package rdb

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kairos-sh/kairos"
)

// TestLogLineCutsLongText: an attempt's error is kept to maxLogText
// bytes of valid UTF-8 and its response excerpt to kairos.MaxResponseBytes
// (the most a topic's response_bytes asks for), so that ten lines stay far
// inside the log length a record's header holds.
func TestLogLineCutsLongText(t *testing.T) {
	long := strings.Repeat("é", kairos.MaxResponseBytes) // 2 bytes a rune: the cut falls inside one at odd lengths
	for _, tc := range []struct{ name, text string }{
		{"short", "connection refused"},
		{"long", "malformed MIME header line: " + long},
		{"long, a rune cut", "x" + long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, err := logLine(kairos.Attempt{N: 1, Error: tc.text, Response: tc.text})
			if err != nil {
				t.Fatal(err)
			}
			var a storedAttempt
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				got  string
				most int
			}{{a.Error, maxLogText}, {a.Response, kairos.MaxResponseBytes}} {
				got, most := c.got, c.most
				if len(tc.text) <= most {
					if got != tc.text {
						t.Errorf("kept %q, want %q", got, tc.text)
					}
				} else if len(got) > most || len(got) < most-utf8.UTFMax || !strings.HasPrefix(tc.text, got) || !utf8.ValidString(got) {
					t.Errorf("kept %d bytes (valid UTF-8 %v), want a prefix of at most %d", len(got), utf8.ValidString(got), most)
				}
			}
		})
	}
}
