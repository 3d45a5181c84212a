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
}

// maxLogText is the most bytes of an attempt's error and response excerpt
// that its log line keeps (the callback keeps a 512-byte excerpt): an error
// can quote what a receiver sent (a malformed header line, say), and the
// log's length must fit its record's header (recordFields).
const maxLogText = 2048

// logLine returns attempt a as a line of a job's attempt log.
func logLine(a kairos.Attempt) (string, error) {
	b, err := json.Marshal(storedAttempt{
		N: a.N, T: ms(a.At), MS: float64(a.Duration.Microseconds()) / 1000,
		Status: a.Status, Error: cutText(a.Error), Response: cutText(a.Response), Event: a.Event,
	})
	return string(b) + "\n", err
}

// cutText returns s cut to maxLogText bytes, a rune cut in two dropped.
func cutText(s string) string {
	if len(s) <= maxLogText {
		return s
	}
	return strings.ToValidUTF8(s[:maxLogText], "")
}
