package rdb

import (
	"encoding/json"
	"strings"

	"github.com/kairos-sh/kairos"
)

// storedAttempt is an attempt as kept in a job's log, one JSON object a
// line: short names, and no raw newline (JSON escapes it).
type storedAttempt struct {
	N        int     `json:"n"`
	T        int64   `json:"t,omitempty"` // when it started, unix ms
	MS       float64 `json:"ms,omitempty"`
	Status   int     `json:"status,omitempty"`
	Error    string  `json:"error,omitempty"`
	Response string  `json:"response,omitempty"`
	Event    string  `json:"event,omitempty"` // "replay": not an attempt but a replay (replay.lua); "expired": the job expired before it (Finish)
	// RH holds the answer's kept headers (kairos.KeptHeaders) under the
	// short names of storedHeaders.
	RH map[string]string `json:"rh,omitempty"`
}

// maxLogText is the most bytes of an attempt's error that its log line
// keeps, and kairos.MaxResponseBytes of its response excerpt (the worker
// cuts it to its topic's response_bytes first): an error can quote what a
// receiver sent (a malformed header line, say), and the log's length must
// fit its record's header (recordFields).
const maxLogText = 2048

// storedHeaders are the short names a log line keeps an answer's headers
// under: every delivered job carries them for the retention period.
var storedHeaders = map[string]string{"Content-Type": "ct", "Retry-After": "ra", "Location": "lo"}

// logLine returns attempt a as a line of a job's attempt log.
func logLine(a kairos.Attempt) (string, error) {
	b, err := json.Marshal(storedAttempt{
		N: a.N, T: ms(a.At), MS: float64(a.Duration.Microseconds()) / 1000,
		Status: a.Status, Error: cutText(a.Error, maxLogText), Response: cutText(a.Response, kairos.MaxResponseBytes), Event: a.Event,
		RH: shortHeaders(a.ResponseHeaders),
	})
	return string(b) + "\n", err
}

// cutText returns s cut to n bytes, a rune cut in two dropped.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// shortHeaders renames kept headers to their storedHeaders names; headers
// that are not kept are dropped.
func shortHeaders(h map[string]string) map[string]string {
	var out map[string]string
	for k, v := range h {
		short, ok := storedHeaders[k]
		if !ok || v == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(h))
		}
		out[short] = v
	}
	return out
}

// longHeaders is shortHeaders undone; unknown names are dropped.
func longHeaders(h map[string]string) map[string]string {
	var out map[string]string
	for short, v := range h {
		for long, s := range storedHeaders {
			if s == short {
				if out == nil {
					out = make(map[string]string, len(h))
				}
				out[long] = v
			}
		}
	}
	return out
}
