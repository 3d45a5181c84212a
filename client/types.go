package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos/internal/duration"
)

// Duration is a time.Duration that travels as a duration string, such as
// "90s" or "1h0m0s", as the API's durations do: Go syntax, plus days ("7d",
// "1d12h") when read.
type Duration time.Duration

// String returns the duration in Go syntax.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON decodes a duration string: Go syntax, or days ("7d").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Time is a time of an answer. It travels as the API spells times, RFC
// 3339 in UTC to the millisecond ("2026-11-21T10:30:00.250Z"), so that an
// answer encoded again reads as the server wrote it.
type Time struct{ time.Time }

// MarshalJSON encodes t as RFC 3339 in UTC with milliseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`), nil
}

// UnmarshalJSON decodes an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error { return t.Time.UnmarshalJSON(b) }

// State is where a job is in its life.
type State string

// The states of a job, in life order.
const (
	StateScheduled State = "scheduled" // waiting for its run_at
	StateReady     State = "ready"     // due, waiting for a worker
	StateActive    State = "active"    // a worker is calling its callback
	StateRetrying  State = "retrying"  // an attempt failed; waiting for its backoff
	StateDelivered State = "delivered" // a callback answered 2xx; kept for the retention period
	StateDead      State = "dead"      // every attempt failed; kept until replayed or cancelled
	StateExpired   State = "expired"   // its expiry came before its next attempt; kept for the retention period
	StateCancelled State = "cancelled" // cancelled before its delivery; kept, with its history, for the retention period
)

// States lists every state in life order.
var States = []State{StateScheduled, StateReady, StateActive, StateRetrying, StateDelivered, StateDead, StateExpired, StateCancelled}

// Kind says whether a job is one of its topic's own (KindJob) or a failure
// or success notification that kairos made of another job's end
// (KindNotification, id "<id>~dead.<n>" or "<id>~ok.<n>").
type Kind string

// The kinds of jobs.
const (
	KindJob          Kind = "job"
	KindNotification Kind = "notification"
)

// Backoff bounds the waits between a job's failed attempts (full jitter:
// the n-th retry waits a random time up to min(Max, Initial·2^(n-1))). In a
// request, a zero field keeps the default; a job shows only the fields it
// sets itself.
type Backoff struct {
	Initial Duration `json:"initial,omitempty"`
	Max     Duration `json:"max,omitempty"`
}

// CallbackSettings are the settings of the callback request that a topic
// gives its jobs and that a job, or a schedule for its occurrences, may
// set over the topic's. [TopicRequest], [JobRequest], [ScheduleRequest],
// [Job], [Schedule], [SubscriptionRequest] and [Subscription] embed them. In a request a zero field is left out:
// the job takes its topic's, the topic the kairos default. In a Job or a
// Schedule, the zero fields are those it does not set itself. A [Topic]
// shows its own with the defaults filled in, in fields of its own.
//
// The URL is not one of them: each type that embeds them has its own
// field for it (CallbackURL; a fan-out subscription's URL).
type CallbackSettings struct {
	Method      string            `json:"method,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Timeout     Duration          `json:"timeout,omitempty"`
	MaxAttempts int               `json:"max_attempts,omitempty"`
	Backoff     *Backoff          `json:"backoff,omitempty"`
}

// TopicRequest is the body of [Client.PutTopic]: the topic's callback URL
// and the defaults its jobs inherit. Zero fields take the kairos defaults.
type TopicRequest struct {
	CallbackURL string `json:"callback_url"`
	CallbackSettings
	Concurrency int             `json:"concurrency,omitempty"`
	Rate        *Rate           `json:"rate,omitempty"`        // deliveries per period, across all processes
	Parallelism int             `json:"parallelism,omitempty"` // callbacks in flight at once, across all processes
	FlowKey     string          `json:"flow_key,omitempty"`    // topics with the same key share one quota
	Breaker     *BreakerRequest `json:"breaker,omitempty"`     // turns the circuit breaker on
	FailureURL  string          `json:"failure_url,omitempty"` // told of each job that goes dead
	// Signing is the secret that signs the topic's callbacks: SigningTenant
	// (the default) or SigningTopic, a secret of the topic's own
	// (GetTopicSigningKeys), so that its receivers hold no secret another
	// topic's receivers accept.
	Signing string `json:"signing,omitempty"`

	// SuccessURL is sent a Notification after each of the topic's jobs
	// is delivered, carrying the receiver's answer.
	SuccessURL string `json:"success_url,omitempty"`
	// ResponseBytes is how much of each answer's body an attempt keeps
	// (Attempt.Response): nil for the server's default (256), a pointer
	// to 0 for none, at most 16384.
	ResponseBytes *int `json:"response_bytes,omitempty"`
}

// The secrets a topic's callbacks may be signed with (TopicRequest.Signing).
const (
	SigningTenant = "tenant"
	SigningTopic  = "topic"
)

// BreakerRequest turns a topic's circuit breaker on: it opens after
// Failures failed attempts in a row (default 5) for Cooldown (default 10s).
type BreakerRequest struct {
	Failures int      `json:"failures,omitempty"`
	Cooldown Duration `json:"cooldown,omitempty"`
}

// Breaker is a topic's circuit breaker: its settings and state ("closed",
// "open" until OpenUntil, or "half-open"). Every topic has one: with no
// breaker configured, Failures and Cooldown are zero and State is
// "closed".
type Breaker struct {
	Failures  int      `json:"failures,omitempty"`
	Cooldown  Duration `json:"cooldown,omitzero"`
	State     string   `json:"state"`
	OpenUntil *Time    `json:"open_until,omitempty"`
}

// Rate is a rate limit: at most Limit deliveries per Period, spread evenly.
type Rate struct {
	Limit  int      `json:"limit"`
	Period Duration `json:"period"`
}

// Topic is a topic with the kairos defaults filled in where it sets none.
// The values of secret-looking headers are masked unless the client asked
// for them with [WithRevealedHeaders].
type Topic struct {
	Name        string            `json:"name"`
	Tenant      string            `json:"tenant"`
	CallbackURL string            `json:"callback_url,omitempty"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers,omitempty"`
	Timeout     Duration          `json:"timeout"`
	MaxAttempts int               `json:"max_attempts"`
	Backoff     Backoff           `json:"backoff"`
	Concurrency int               `json:"concurrency"`
	Rate        *Rate             `json:"rate,omitempty"`
	Parallelism int               `json:"parallelism,omitempty"`
	FlowKey     string            `json:"flow_key,omitempty"`
	Breaker     *Breaker          `json:"breaker,omitempty"` // always set by the server: State "closed" when none is configured
	FailureURL  string            `json:"failure_url,omitempty"`
	Signing     string            `json:"signing,omitempty"` // SigningTenant or SigningTopic
	Paused      bool              `json:"paused"`            // deliveries stopped (PauseTopic)
	CreatedAt   Time              `json:"created_at"`
	UpdatedAt   Time              `json:"updated_at"`

	SuccessURL    string `json:"success_url,omitempty"`
	ResponseBytes int    `json:"response_bytes,omitempty"` // bytes of each answer's body an attempt keeps; 0 none
}

// Attempt is one callback attempt.
type Attempt struct {
	N          int     `json:"n"` // 1-based
	At         Time    `json:"at"`
	DurationMS float64 `json:"duration_ms"`
	Status     int     `json:"status,omitempty"`   // the HTTP status; 0 when there was no answer
	Error      string  `json:"error,omitempty"`    // why the attempt failed
	Response   string  `json:"response,omitempty"` // the start of the response body, up to the topic's ResponseBytes
	// Event is set on an entry that is not an attempt: "replay" when the
	// dead job was replayed (N is then the attempts made before it).
	Event string `json:"event,omitempty"`
	// ResponseHeaders are the answer's Content-Type, Retry-After and
	// Location, those it had.
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
}

// Job is a job as the API shows it. The settings it does not set itself
// (CallbackURL and its CallbackSettings) are zero and come from its topic
// when it fires. Lists and batch results carry no
// Payload.
type Job struct {
	ID            string `json:"id"`
	Topic         string `json:"topic"`
	Tenant        string `json:"tenant"`
	Kind          Kind   `json:"kind,omitempty"` // job, or notification for a failure or success notification
	State         State  `json:"state"`
	RunAt         Time   `json:"run_at"`
	NextRunAt     Time   `json:"next_run_at,omitzero"` // pending jobs only
	CreatedAt     Time   `json:"created_at"`
	DoneAt        Time   `json:"done_at,omitzero"` // when it was delivered, died, expired or was cancelled
	Attempts      int    `json:"attempts"`
	ReplayedAfter int    `json:"replayed_after,omitempty"` // attempts made before its last replay; max_attempts counts those after
	CallbackURL   string `json:"callback_url,omitempty"`
	CallbackSettings
	FlowKey     string          `json:"flow_key,omitempty"`
	FailureURL  string          `json:"failure_url,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	LastAttempt *Attempt        `json:"last_attempt,omitempty"`
	AttemptLog  []Attempt       `json:"attempt_log,omitempty"` // the last 10 attempts, oldest first
	// Result is set in the answer to a create only: what it did. A
	// ResultDuplicate whose first job's record is gone (cancelled, or past
	// the retention period) carries only ID, Topic and Tenant.
	Result string `json:"result,omitempty"`

	SuccessURL string `json:"success_url,omitempty"`
	ExpiresAt  Time   `json:"expires_at,omitzero"` // its expiry, if it has one
	Priority   int    `json:"priority,omitempty"`
	// Labels are the job's labels (a schedule's occurrence carries its
	// schedule's).
	Labels map[string]string `json:"labels,omitempty"`
}

// The results of a create: ResultCreated (201); ResultReplaced when the job
// replaced one of its id that had not fired, ResultDebounced when it did so
// under ConflictDebounce, ResultKept when ConflictKeep left it as it was,
// ResultDuplicate when a create of the same DedupKey came within its
// window (the job is that create's) (200).
const (
	ResultCreated   = "created"
	ResultReplaced  = "replaced"
	ResultKept      = "kept"
	ResultDebounced = "debounced"
	ResultDuplicate = "duplicate"
)

// JobList is a page of jobs, newest first. NextCursor, passed back as
// [ListOptions.Cursor], fetches the next page; it is empty on the last.
type JobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// ListOptions selects a page of a listing. Zero fields are left out: every
// state, the server's page size (50), the first page.
type ListOptions struct {
	State  State  // only jobs in this state
	Kind   Kind   // only jobs (KindJob) or only notifications (KindNotification); "" both
	Limit  int    // page size, 1 to 500
	Cursor string // the NextCursor of the previous page
	// Labels keep the jobs that carry every one of them (job listings
	// only; at most 10).
	Labels map[string]string
}

// BatchResult is the answer to [Client.CreateJobs]: counts, and one item
// per requested job in request order.
type BatchResult struct {
	Created  int `json:"created"`
	Replaced int `json:"replaced"` // every 200: replaced, debounced, kept or duplicate
	// Kept and Duplicate count, of Replaced, the items that changed nothing.
	Kept      int         `json:"kept,omitempty"`
	Duplicate int         `json:"duplicate,omitempty"`
	Failed    int         `json:"failed"`
	Results   []BatchItem `json:"results"`
}

// BatchItem is one job's outcome in a batch: Job when it was created
// (Status 201) or replaced one of its id (200), Error otherwise.
type BatchItem struct {
	Index  int    `json:"index"`
	Status int    `json:"status"`
	Job    *Job   `json:"job,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// SigningKeys are the tenant's callback signing secrets, in the Standard
// Webhooks whsec_ form. Callbacks are signed with Current; receivers should
// accept both.
type SigningKeys struct {
	Current string `json:"current"`
	Next    string `json:"next"`
}

// Stats are per-topic counts and recent delivery figures.
type Stats struct {
	At     Time         `json:"at"`
	Topics []TopicStats `json:"topics"`
	// DueNextHour counts the jobs due in each 5-minute slot of the next
	// hour, over every tenant; for admins naming no tenant only.
	DueNextHour []int64 `json:"due_next_hour,omitempty"`
}

// TopicStats are one topic's figures.
type TopicStats struct {
	Tenant          string      `json:"tenant"`
	Topic           string      `json:"topic"`
	Counts          Counts      `json:"counts"`
	Occurrences     Occurrences `json:"occurrences"`
	ReadyListLength int64       `json:"ready_list_length"`
	Recent          Recent      `json:"recent"`
	Paused          bool        `json:"paused"`
	Breaker         *BreakerNow `json:"breaker,omitempty"` // when the topic has a circuit breaker
}

// BreakerNow is the state of a topic's circuit breaker in Stats.
type BreakerNow struct {
	State     string `json:"state"`
	OpenUntil *Time  `json:"open_until,omitempty"`
}

// Occurrences count a topic's schedule occurrences since its first job;
// they only grow. Fired less Delivered less Dead is the occurrences
// between their first attempt and their end.
type Occurrences struct {
	// Fired counts occurrences claimed for their first attempt; a replayed
	// dead one fires again, one dropped by catch_up "none" never fired.
	Fired     int64 `json:"fired"`
	Delivered int64 `json:"delivered"` // answered 2xx
	Dead      int64 `json:"dead"`      // failed their last attempt
	// Skipped counts instants a schedule's overlap rule did not fire.
	Skipped int64 `json:"skipped"`
}

// Counts are a topic's jobs by state.
type Counts struct {
	Scheduled int64 `json:"scheduled"`
	Ready     int64 `json:"ready"`
	Active    int64 `json:"active"`
	Retrying  int64 `json:"retrying"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
	Expired   int64 `json:"expired"`
	Cancelled int64 `json:"cancelled"`
}

// Recent are a topic's figures over the last Minutes minutes.
type Recent struct {
	Minutes            int      `json:"minutes"`
	Delivered          int64    `json:"delivered"`
	FailedAttempts     int64    `json:"failed_attempts"`
	Dead               int64    `json:"dead"`
	DeliveredPerSecond float64  `json:"delivered_per_second"`
	FailedPerSecond    float64  `json:"failed_per_second"`
	Lateness           Lateness `json:"lateness"`
}

// Lateness is how late first attempts started, in milliseconds (upper
// bounds of histogram buckets).
type Lateness struct {
	Samples int64   `json:"samples"`
	P50MS   float64 `json:"p50_ms"`
	P90MS   float64 `json:"p90_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}
