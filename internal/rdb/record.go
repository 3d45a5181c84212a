package rdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/kairos-sh/kairos"
)

// record is a job as stored in its shard's pool (see layout.go).
type record struct {
	state    byte
	attempts int64
	created  int64 // unix ms
	runAt    int64
	next     int64
	finished int64
	lease    int64 // lease timeout, ms
	settings []byte
	log      []byte
	payload  []byte
}

// settings are a job's own settings, stored as JSON that only Go reads.
// Zero values are left out: the job then inherits its topic's.
type settings struct {
	URL            string            `json:"u,omitempty"`
	Method         string            `json:"m,omitempty"`
	ContentType    string            `json:"ct,omitempty"`
	Headers        map[string]string `json:"h,omitempty"`
	TimeoutMS      int64             `json:"to,omitempty"`
	MaxAttempts    int               `json:"ma,omitempty"`
	BackoffInitial int64             `json:"bi,omitempty"`
	BackoffMax     int64             `json:"bm,omitempty"`
	TraceParent    string            `json:"tp,omitempty"`
	TraceState     string            `json:"ts,omitempty"`
	FlowKey        string            `json:"fk,omitempty"`
	FailureURL     string            `json:"fu,omitempty"`
	SuccessURL     string            `json:"su,omitempty"`
	// ReplayedAfter is how many attempts the job made before its last
	// replay (replay.lua writes it; a create never does).
	ReplayedAfter int `json:"rb,omitempty"`
	// ExpiresAt is the job's expiry (unix ms), Priority its priority;
	// left out when unset (layout.go, "Expiry and priority").
	ExpiresAt int64 `json:"ex,omitempty"`
	Priority  int   `json:"pr,omitempty"`
	// Labels are the job's labels; the scripts find them by the key
	// "lb" (index.lua's labelKeys), so no other field may be named so.
	Labels map[string]string `json:"lb,omitempty"`
}

// empty reports whether s holds no setting: every field zero, an empty
// map counted as none. It looks at every field, so a field added to
// settings is counted without being named here (TestSettingsEmptySeesEveryField).
func (s settings) empty() bool {
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	if len(s.Labels) == 0 {
		s.Labels = nil
	}
	return reflect.ValueOf(s).IsZero()
}

// encodeSettings returns j's own settings as stored; nil when it has none.
func encodeSettings(j kairos.Job) ([]byte, error) {
	s := settings{URL: j.CallbackURL, Method: j.Method, ContentType: j.ContentType, Headers: j.Headers,
		TimeoutMS: j.Timeout.Milliseconds(), MaxAttempts: j.MaxAttempts,
		BackoffInitial: j.BackoffInitial.Milliseconds(), BackoffMax: j.BackoffMax.Milliseconds(),
		TraceParent: j.TraceParent, TraceState: j.TraceState, FlowKey: j.FlowKey, FailureURL: j.FailureURL,
		SuccessURL: j.SuccessURL, Priority: j.Priority, Labels: j.Labels}
	if !j.ExpiresAt.IsZero() {
		s.ExpiresAt = ms(j.ExpiresAt)
	}
	if s.empty() {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode job settings: %w", err)
	}
	return b, nil
}

// header returns the record's header (recordFields). A value too wide for
// its field keeps its low bytes, as the scripts' struct.pack does;
// checkRecord keeps such values out.
func (r record) header() string {
	b := make([]byte, 0, recordHeaderLen)
	b = append(b, r.state)
	for i, v := range r.nums() {
		b = appendBE(b, v, recordFields[i+1].width)
	}
	return string(b)
}

// nums are the header's numeric fields, in recordFields' order.
func (r record) nums() [8]int64 {
	return [8]int64{r.attempts, r.created, r.runAt, r.next, r.finished, r.lease, int64(len(r.settings)), int64(len(r.log))}
}

// body is what follows the header: settings, log and payload.
func (r record) body() string {
	return string(r.settings) + string(r.log) + string(r.payload)
}

func (r record) encode() string { return r.header() + r.body() }

// appendBE appends n as a big-endian unsigned integer of width bytes.
func appendBE(b []byte, n int64, width int) []byte {
	for sh := 8 * (width - 1); sh >= 0; sh -= 8 {
		b = append(b, byte(n>>sh))
	}
	return b
}

// beUint reads a big-endian unsigned integer of up to 7 bytes.
func beUint(b string) int64 {
	var n int64
	for i := range len(b) {
		n = n<<8 | int64(b[i])
	}
	return n
}

var errBadRecord = errors.New("malformed job record")

// decodeRecord parses a stored record. A value too short for its header
// or for the lengths it gives, or of an unknown state, is errBadRecord.
func decodeRecord(v string) (record, error) {
	if len(v) < recordHeaderLen || stateOf(v[0]) == "" {
		return record{}, errBadRecord
	}
	var nums [8]int64
	at := recordFields[0].width
	for i, f := range recordFields[1:] {
		nums[i] = beUint(v[at : at+f.width])
		at += f.width
	}
	r := record{state: v[0], attempts: nums[0], created: nums[1], runAt: nums[2], next: nums[3], finished: nums[4], lease: nums[5]}
	body := v[recordHeaderLen:]
	ls, ll := nums[6], nums[7]
	if ls+ll > int64(len(body)) {
		return record{}, errBadRecord
	}
	r.settings = []byte(body[:ls])
	r.log = []byte(body[ls : ls+ll])
	r.payload = []byte(body[ls+ll:])
	return r, nil
}

// errTooWide says a job's value does not fit its record's header.
func errTooWide(what string, v, most int64) error {
	return fmt.Errorf("%w: %s is %d; a stored job holds 0 to %d", kairos.ErrInvalid, what, v, most)
}

// checkRecord reports whether a job of run_at runAt (ms), lease timeout
// (ms) and settings of that length fits the header of its record: the
// scripts would cut a wider value without a word.
func checkRecord(runAt, timeout int64, settings int) error {
	switch {
	case runAt < 0 || runAt > recordMax("ra"):
		return errTooWide("run_at (unix ms)", runAt, recordMax("ra"))
	case timeout < 0 || timeout > recordMax("lt"):
		return errTooWide("the timeout (ms)", timeout, recordMax("lt"))
	case int64(settings) > recordMax("ls"):
		return errTooWide("the length of the job's settings (bytes)", int64(settings), recordMax("ls"))
	}
	return nil
}

// job turns the record of key into a Job; webhookID derives its webhook id.
func (r record) job(key kairos.JobKey, webhookID func(kairos.JobKey, int64) string) (kairos.Job, error) {
	j := kairos.Job{
		JobKey: key, State: stateOf(r.state), Attempts: int(r.attempts),
		RunAt: fromMS(r.runAt), CreatedAt: fromMS(r.created), DoneAt: fromMS(r.finished),
		Payload: r.payload,
	}
	j.UID = webhookID(key, r.created)
	switch j.State {
	case kairos.StateScheduled, kairos.StateRetrying, kairos.StateReady:
		j.NextRunAt = fromMS(r.next)
	case kairos.StateActive:
		j.NextRunAt = j.RunAt
	}
	if len(r.settings) > 0 {
		var s settings
		if err := json.Unmarshal(r.settings, &s); err != nil {
			return kairos.Job{}, fmt.Errorf("job %s: decode settings: %w", key, err)
		}
		j.CallbackURL, j.Method, j.ContentType, j.Headers = s.URL, s.Method, s.ContentType, s.Headers
		j.Timeout = time.Duration(s.TimeoutMS) * time.Millisecond
		j.MaxAttempts = s.MaxAttempts
		j.BackoffInitial = time.Duration(s.BackoffInitial) * time.Millisecond
		j.BackoffMax = time.Duration(s.BackoffMax) * time.Millisecond
		j.TraceParent, j.TraceState, j.FlowKey, j.FailureURL = s.TraceParent, s.TraceState, s.FlowKey, s.FailureURL
		j.ReplayedAfter = s.ReplayedAfter
		j.SuccessURL = s.SuccessURL
		if s.ExpiresAt > 0 {
			j.ExpiresAt = fromMS(s.ExpiresAt)
		}
		j.Priority = s.Priority
		j.Labels = s.Labels
	}
	log, err := decodeLogLines(r.log)
	if err != nil {
		return kairos.Job{}, fmt.Errorf("job %s: %w", key, err)
	}
	j.Log = log
	return j, nil
}

// decodeLogLines reads an attempt log: one JSON attempt a line.
func decodeLogLines(b []byte) ([]kairos.Attempt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var out []kairos.Attempt
	for line := range bytes.SplitSeq(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var a storedAttempt
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("decode attempt log: %w", err)
		}
		out = append(out, kairos.Attempt{
			N: a.N, At: fromMS(a.T), Duration: time.Duration(a.MS * float64(time.Millisecond)),
			Status: a.Status, Error: a.Error, Response: a.Response, Event: a.Event,
			ResponseHeaders: longHeaders(a.RH),
		})
	}
	return out, nil
}
