package rdb

import (
	"encoding/json"

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
	Event    string  `json:"event,omitempty"` // "replay": not an attempt but a replay (replay.lua)
}

// logLine returns attempt a as a line of a job's attempt log.
func logLine(a kairos.Attempt) (string, error) {
	b, err := json.Marshal(storedAttempt{
		N: a.N, T: ms(a.At), MS: float64(a.Duration.Microseconds()) / 1000,
		Status: a.Status, Error: a.Error, Response: a.Response,
	})
	return string(b) + "\n", err
}
