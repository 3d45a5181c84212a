// Package kairos holds the words every part of the scheduler shares: jobs,
// topics, their states, and the sentinel errors callers branch on.
package kairos

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// State is where a job is in its life.
type State string

// The states a job moves through. Scheduled, Ready, Active and Retrying jobs
// are pending: their attempt is still to come, or under way.
const (
	StateScheduled State = "scheduled" // waiting for its run_at
	StateReady     State = "ready"     // due, on its topic's ready list
	StateActive    State = "active"    // a worker is calling its callback
	StateRetrying  State = "retrying"  // an attempt failed; waiting for its backoff
	StateDelivered State = "delivered" // a callback answered 2xx; kept for the retention period
	StateDead      State = "dead"      // every attempt failed; kept until replayed or deleted
	StateExpired   State = "expired"   // its expires_at passed before an attempt could start; kept for the retention period
	StateCancelled State = "cancelled" // cancelled before its delivery; kept, with its history, for the retention period
)

// States lists every state in life order.
var States = []State{StateScheduled, StateReady, StateActive, StateRetrying, StateDelivered, StateDead, StateExpired, StateCancelled}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Pending reports whether a job in state s still waits for a delivery.
func (s State) Pending() bool {
	return s == StateScheduled || s == StateReady || s == StateActive || s == StateRetrying
}

// Sentinel errors. The api package maps them to HTTP statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// Defaults applied when neither the job nor its topic says otherwise.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxAttempts    = 10
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = time.Hour
	DefaultConcurrency    = 10
	DefaultMethod         = "POST"
	DefaultContentType    = "application/json"
)

// Topic is a tenant's named stream of jobs and the defaults its jobs inherit.
// Zero fields mean "use the kairos default".
type Topic struct {
	Tenant         string
	Name           string
	CallbackURL    string
	Method         string
	Headers        map[string]string
	Timeout        time.Duration
	MaxAttempts    int
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	Concurrency    int
	// Flow control, enforced across every kairos process sharing the
	// Redis: at most RateLimit deliveries per RatePeriod, spread evenly
	// (one every RatePeriod/RateLimit), and at most Parallelism callbacks
	// in flight at once; 0 is no limit. Topics with the same FlowKey share
	// one quota (each gated by its own limits: give them the same); ""
	// is the topic's own. Which limits apply, and where each is asked, is
	// flow control's rule (flow.go: Limited, Paced, Gated, ...).
	RateLimit   int
	RatePeriod  time.Duration
	Parallelism int
	FlowKey     string
	// Circuit breaker of the topic's flow, off when BreakerFailures is 0:
	// after that many failed attempts in a row it opens, and nothing is
	// delivered for BreakerCooldown; then one probe goes, and its success
	// closes it while its failure opens it again for twice as long, at most
	// MaxBreakerCooldown. Jobs wait meanwhile, keeping their attempts.
	BreakerFailures int
	BreakerCooldown time.Duration
	// FailureURL, when set, is sent a signed notification when a job of
	// the topic goes dead (a job of its own, id NoticeID, retried like
	// any; a notification's own death notifies no one).
	FailureURL string
	// SuccessURL, when set, is sent a signed notification after each of
	// the topic's jobs is delivered (a job of its own, id SuccessNoticeID,
	// retried like any), carrying the receiver's answer.
	SuccessURL string
	// ResponseBytes is how much of each answer's body an attempt keeps in
	// its job's log: 0 is DefaultResponseBytes, ResponseBytesNone keeps
	// none (KeptResponse says which).
	ResponseBytes int
	// Signing names the secret that signs the topic's callbacks:
	// SigningTenant ("" too), the tenant's, shared by its topics; or
	// SigningTopic, a secret of the topic's own, so that a receiver of one
	// topic cannot sign callbacks that another's would accept.
	Signing string
	// Paused topics deliver nothing: their due jobs wait, keeping their
	// due times and attempts, until resume (Store.PauseTopic). PUT of a
	// topic leaves it as it is.
	Paused    bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// Subscription is set on the topic a delivery fires as
	// (Subscription.DeliveryTopic): the subscription's name, which gives
	// it a flow and, with SigningSubscription, a secret of its own.
	Subscription string
}

// The secrets a topic's callbacks may be signed with (Topic.Signing).
const (
	SigningTenant = "tenant"
	SigningTopic  = "topic"
)

// OwnSecret returns t's name when its callbacks are signed with a secret
// of its own (Signing is SigningTopic), else "": the tenant's secret.
// A delivery's topic signing with its subscription's secret
// (SigningSubscription) returns "<topic>/<subscription>".
func (t Topic) OwnSecret() string {
	switch {
	case t.Signing == SigningSubscription && t.Subscription != "":
		return t.Name + "/" + t.Subscription
	case t.Signing == SigningTopic:
		return t.Name
	}
	return ""
}

// MaxBreakerCooldown bounds a circuit breaker's cool-down as failed probes
// double it.
const MaxBreakerCooldown = 10 * time.Minute

// Breaker is a circuit breaker's state: "closed", "open" (until Until) or
// "half-open" (a probe may go, or is out).
type Breaker struct {
	State string
	Until time.Time
	// Changed is set in what recording an answer returns (the store's
	// BreakerAnswer) when that answer moved the breaker: opened it, opened it
	// again after a failed probe, or closed it from open or half-open.
	Changed bool
}

// WithDefaults returns t with every zero default filled in.
func (t Topic) WithDefaults() Topic {
	if t.Method == "" {
		t.Method = DefaultMethod
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultTimeout
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.BackoffInitial == 0 {
		t.BackoffInitial = DefaultBackoffInitial
	}
	if t.BackoffMax == 0 {
		t.BackoffMax = DefaultBackoffMax
	}
	if t.Concurrency == 0 {
		t.Concurrency = DefaultConcurrency
	}
	return t
}

// JobKey names a job: jobs are keyed by tenant, topic and id.
type JobKey struct {
	Tenant string
	Topic  string
	ID     string
}

// String returns "tenant/topic/id".
func (k JobKey) String() string { return k.Tenant + "/" + k.Topic + "/" + k.ID }

// Job is one scheduled callback. Fields left zero inherit the topic's
// defaults when the job fires, so editing a topic reaches its pending jobs.
type Job struct {
	JobKey
	UID            string // stable across attempts: the callback's webhook-id
	CallbackURL    string
	Method         string
	Headers        map[string]string
	ContentType    string
	Payload        []byte
	Timeout        time.Duration
	MaxAttempts    int
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// TraceParent and TraceState are the W3C trace context of the job's
	// create, sent with every attempt; empty when it had none.
	TraceParent string
	TraceState  string
	// FlowKey puts the job in that flow-control quota of its tenant
	// instead of its topic's (Topic.FlowKey); FailureURL is told of its
	// death instead of its topic's. Both are limits and notices of the
	// topic's settings otherwise.
	FlowKey    string
	FailureURL string
	// SuccessURL is told of the job's delivery instead of its topic's
	// SuccessURL.
	SuccessURL string

	State     State
	RunAt     time.Time // the time this schedule is for
	NextRunAt time.Time // when the bucket hands it out next (pending jobs only)
	Attempts  int       // attempts started so far, replays included: numbers go on after a replay
	// ReplayedAfter is how many attempts the job had made when it was last
	// replayed (0 if never): MaxAttempts counts the attempts after it.
	ReplayedAfter int
	CreatedAt     time.Time
	DoneAt        time.Time // when it was delivered or died
	Log           []Attempt // the last attempts, oldest first

	// Create says how a create treats a job of the same id or dedup key;
	// it is not stored with the job.
	Create CreateOptions

	// ExpiresAt, when set, is the last instant an attempt may start: a
	// job not delivered by then ends StateExpired. Zero: it never expires.
	ExpiresAt time.Time
	// Priority (0 to MaxPriority) orders the flow's jobs that a flow limit
	// keeps waiting together (WaitOrder, PriorityStep).
	Priority int
	// Labels are the job's own key-value tags (at most MaxLabels), for
	// listings and bulk operations to select it by; a schedule's
	// occurrences carry their schedule's.
	Labels map[string]string
}

// MaxPriority is the highest job priority; 0, the default, the lowest.
const MaxPriority = 9

// PriorityStep is what one step of priority is worth against due time
// while a flow limit keeps jobs waiting (WaitOrder): a job of priority p waits as if it
// were due p steps earlier. A higher priority goes first among jobs due
// within a few steps of one another, and no job is overtaken by one due
// more than MaxPriority steps after it, however many of higher priority
// arrive.
const PriorityStep = time.Minute

// Expired reports whether no attempt at j may start at now: it has an
// expiry and now is past it.
func (j Job) Expired(now time.Time) bool {
	return !j.ExpiresAt.IsZero() && now.After(j.ExpiresAt)
}

// Label limits: a job or schedule has at most MaxLabels labels, each key
// 1 to MaxLabelKey characters of [a-z0-9_.-], each value at most
// MaxLabelValue characters.
const (
	MaxLabels     = 10
	MaxLabelKey   = 32
	MaxLabelValue = 64
)

// ValidLabelKey reports whether k may name a label: 1 to MaxLabelKey
// characters of a-z, 0-9, '_', '.' and '-'.
func ValidLabelKey(k string) bool {
	if len(k) == 0 || len(k) > MaxLabelKey {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// CreateOptions are a create's answers to an earlier job: OnConflict for
// one of the same id that has not fired, DedupKey for one created with the
// same key within DedupWindow. The zero value replaces, as creates always did.
type CreateOptions struct {
	OnConflict OnConflict
	// MaxDelay bounds a debounce: the job's time never moves past its
	// first create's time plus MaxDelay.
	MaxDelay time.Duration
	// DedupKey, when set, makes a create within DedupWindow of the first
	// create of that key (same tenant and topic) create nothing.
	DedupKey    string
	DedupWindow time.Duration
}

// OnConflict is what a create does to a job of its id that has not fired.
type OnConflict string

const (
	ConflictReplace  OnConflict = "replace"  // new settings and time (the default)
	ConflictKeep     OnConflict = "keep"     // nothing changes
	ConflictDebounce OnConflict = "debounce" // new settings and time, the time bounded by MaxDelay
)

// Create limits: DefaultDedupWindow when a create names no dedup_window.
const (
	DefaultDedupWindow = 10 * time.Minute
	MaxDedupWindow     = 7 * 24 * time.Hour
	MaxDebounceDelay   = 30 * 24 * time.Hour
	MaxDedupKey        = 200
)

// Attempt records one callback attempt.
type Attempt struct {
	N        int           `json:"n"`
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"duration"`
	Status   int           `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Response string        `json:"response,omitempty"`
	// ResponseHeaders are the answer's Content-Type, Retry-After and
	// Location, those it had (KeptHeaders); nil when none.
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	// Event is set on an entry that is not an attempt: AttemptReplay for
	// a replay of the dead job (N is then the attempts made before it).
	Event string `json:"event,omitempty"`
}

// AttemptReplay is the Event of the log entry a replay adds.
const AttemptReplay = "replay"

// AttemptExpired is the Event of the log entry of a job that expired
// before the attempt it was handed out for started (N is then the
// attempts made before it).
const AttemptExpired = "expired"

// AttemptsLeft is how many attempts the job may still start: MaxAttempts
// counts from its last replay.
func (j Job) AttemptsLeft() int { return j.MaxAttempts - (j.Attempts - j.ReplayedAfter) }

// MaxLoggedAttempts is how many attempts a job keeps in its log.
const MaxLoggedAttempts = 10

// Resolve fills the job's unset fields from its topic (already defaulted).
func (j Job) Resolve(t Topic) Job {
	t = t.WithDefaults()
	if _, ok := NoticeOf(j.ID); ok {
		// a failure notification goes to the failure URL with its own
		// settings: none of the topic's headers (they are for its callback
		// URL), POST
		t.Headers, t.Method = nil, DefaultMethod
	}
	if j.CallbackURL == "" {
		j.CallbackURL = t.CallbackURL
	}
	if j.Method == "" {
		j.Method = t.Method
	}
	if j.ContentType == "" {
		j.ContentType = DefaultContentType
	}
	if j.Timeout == 0 {
		j.Timeout = t.Timeout
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = t.MaxAttempts
	}
	if j.BackoffInitial == 0 {
		j.BackoffInitial = t.BackoffInitial
	}
	if j.BackoffMax == 0 {
		j.BackoffMax = t.BackoffMax
	}
	if len(t.Headers) > 0 {
		h := make(map[string]string, len(t.Headers)+len(j.Headers))
		for k, v := range t.Headers {
			h[k] = v
		}
		for k, v := range j.Headers {
			h[k] = v
		}
		j.Headers = h
	}
	return j
}

// Schedule is a recurring schedule: each of its instants fires an
// occurrence, an ordinary job whose id is OccurrenceID(ID, instant).
type Schedule struct {
	Tenant, Topic, ID string
	Cron              string        // a cron expression, or empty with Every
	Every             time.Duration // an interval, or zero with Cron
	Timezone          string        // IANA name; "" is UTC
	StartAt, EndAt    time.Time     // zero: unbounded
	CatchUp           CatchUp
	Paused            bool
	Job               Job // each occurrence's settings and payload; its key and times are unused
	CreatedAt         time.Time
	UpdatedAt         time.Time

	// As stored, read back:
	Pending       time.Time // the instant of the occurrence waiting to fire; zero when none
	LastFired     time.Time // the instant of the last occurrence the pattern fired; zero when none
	LastTriggered time.Time // the instant of the last occurrence a manual trigger fired; zero when none

	Overlap Overlap       // what an instant does while the previous occurrence runs; "" is OverlapAllow
	Jitter  time.Duration // each occurrence fires its instant plus a delay in [0, Jitter), fixed per instant
	MaxRuns int           // after this many occurrences fired the schedule is completed; 0: no bound

	// As stored, read back:
	Runs           int       // occurrences fired (kept when only Overlap or MaxRuns is set)
	Skipped        int64     // instants overlap "skip" or "buffer_one" did not fire
	Completed      bool      // MaxRuns occurrences fired: nothing more fires
	LastBackfilled time.Time // the latest instant the last backfill fired; zero when none
	BackfilledAt   time.Time // when that backfill ran
}

// Overlap says what a schedule's instant does while its previous
// occurrence is still active or retrying.
type Overlap string

const (
	OverlapAllow     Overlap = "allow"      // fire anyway (the default)
	OverlapSkip      Overlap = "skip"       // do not fire; counted as skipped
	OverlapBufferOne Overlap = "buffer_one" // fire once the previous one ends; at most one waits, others are skipped
)

// MaxBackfill bounds the instants one backfill may name.
const MaxBackfill = 1000

// CatchUp says what a schedule does with occurrences missed while no kairos
// ran (or while one was claimed more than MisfireGrace late).
type CatchUp string

const (
	CatchUpOne  CatchUp = "one"  // fire once for all the missed ones (the default)
	CatchUpNone CatchUp = "none" // fire none of them
	CatchUpAll  CatchUp = "all"  // fire each, at most MaxCatchUp of them
)

// MisfireGrace is how late an occurrence may be claimed and still count as
// on time rather than missed (catch_up "none" skips a missed one).
const MisfireGrace = time.Minute

// MaxCatchUp bounds the missed occurrences catch_up "all" fires.
const MaxCatchUp = 100

// OccurrenceMark joins a schedule's id and an instant (unix ms, decimal)
// in the job id of its occurrence at that instant.
const OccurrenceMark = "@"

// OccurrenceID is the job id of a schedule's occurrence at instant t.
func OccurrenceID(scheduleID string, t time.Time) string {
	return scheduleID + OccurrenceMark + strconv.FormatInt(t.UnixMilli(), 10)
}

// ScheduleOf returns the schedule id of an occurrence's job id, or false
// when id is not one: "<schedule id>@<unix ms>". Job ids of that form are
// reserved for occurrences.
func ScheduleOf(id string) (string, bool) {
	i := strings.LastIndexByte(id, OccurrenceMark[0])
	if i <= 0 || i == len(id)-1 {
		return "", false
	}
	for _, c := range id[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return id[:i], true
}

// NoticeMark joins a dead job's id and the attempt that made it dead in
// its failure notification's job id.
const NoticeMark = "~dead."

// NoticeID is the job id of the failure notification of job id, dead
// after attempt n: "<id>~dead.<n>". Such ids are reserved.
func NoticeID(id string, n int) string { return id + NoticeMark + strconv.Itoa(n) }

// NoticeOf returns the job id of a failure or success notification's job
// id (ParseNotice), or false when id is not one.
func NoticeOf(id string) (string, bool) {
	j, _, ok := ParseNotice(id)
	return j, ok
}

// Notice is a notification to create with a job's death (a failure
// notification, NoticeID) or delivery (a success notification,
// SuccessNoticeID): its body is POSTed, signed, to URL.
type Notice struct {
	URL  string
	Body []byte
}

// ParseOccurrence splits an occurrence's job id, "<schedule id>@<unix
// ms>", into its schedule id and instant; false when id is not one.
func ParseOccurrence(id string) (scheduleID string, at time.Time, ok bool) {
	sid, ok := ScheduleOf(id)
	if !ok {
		return "", time.Time{}, false
	}
	ms, err := strconv.ParseInt(id[len(sid)+1:], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return sid, time.UnixMilli(ms), true
}

// TickSummary is what a tick (`kairos tick`, POST /v1/tick) did: it ran
// the scanner and workers for a while and stopped.
type TickSummary struct {
	Delivered int `json:"delivered"` // attempts that delivered their job
	Failed    int `json:"failed"`    // attempts that failed (their jobs retry later, or are dead)
	Dead      int `json:"dead"`      // of the failed, jobs that are dead now
	// InFlight is how many callbacks were still running when the tick's
	// time was up: their jobs are left to their leases (or, in a process
	// that keeps running, finish after the answer).
	InFlight int `json:"in_flight"`
	// NextDue is the earliest time a job in the shards this tick scanned
	// may be due (the start of the first timing-wheel slot left, at most a
	// slot width early); nil when they hold nothing.
	NextDue *time.Time `json:"next_due"`
	// Shards is how many shards the tick scanned; others were held by
	// other live processes.
	Shards  int     `json:"shards"`
	Seconds float64 `json:"seconds"` // how long it ran
}

// Quota limits what one tenant may hold and ask of kairos, so that one
// cannot exhaust Redis or the API for all. A zero field is no limit.
type Quota struct {
	// MaxPending bounds the tenant's pending jobs (scheduled, ready,
	// active, retrying) across its topics: a create past it is refused.
	MaxPending int64
	// Rate bounds the tenant's API requests: Rate per RatePeriod, with
	// bursts of up to Burst (default Rate) at once.
	Rate       int
	RatePeriod time.Duration
	Burst      int
}

// QuotaOverride is the quota an admin set for one tenant: a nil field
// takes the deployment's default.
type QuotaOverride struct {
	MaxPending *int64         `json:"max_pending,omitempty"`
	Rate       *int           `json:"rate,omitempty"`
	RatePeriod *time.Duration `json:"rate_period,omitempty"`
	Burst      *int           `json:"burst,omitempty"`
}

// Apply returns q with the override's fields in place of its own.
func (o QuotaOverride) Apply(q Quota) Quota {
	if o.MaxPending != nil {
		q.MaxPending = *o.MaxPending
	}
	if o.Rate != nil {
		q.Rate = *o.Rate
		if o.Burst == nil {
			q.Burst = 0 // the rate's own default, not the default rate's burst
		}
	}
	if o.RatePeriod != nil {
		q.RatePeriod = *o.RatePeriod
	}
	if o.Burst != nil {
		q.Burst = *o.Burst
	}
	return q.WithDefaults()
}

// WithDefaults fills a rate's period (1s) and burst (the rate).
func (q Quota) WithDefaults() Quota {
	if q.Rate > 0 && q.RatePeriod <= 0 {
		q.RatePeriod = time.Second
	}
	if q.Rate > 0 && q.Burst <= 0 {
		q.Burst = q.Rate
	}
	return q
}

// Outcome is what an attempt came to.
type Outcome int

const (
	OutcomeDelivered Outcome = iota + 1 // the receiver answered 2xx
	OutcomeRetrying                     // it failed and is tried again at its retry time
	OutcomeDead                         // it failed for good: the job is dead
	OutcomeExpired                      // its expiry came before its next attempt could start
)

// State is the state an outcome moves its job to.
func (o Outcome) State() State {
	switch o {
	case OutcomeDelivered:
		return StateDelivered
	case OutcomeRetrying:
		return StateRetrying
	case OutcomeDead:
		return StateDead
	case OutcomeExpired:
		return StateExpired
	}
	return ""
}
