package api

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// jobRequest is the body of POST /v1/topics/{topic}/jobs.
type jobRequest struct {
	ID          *string         `json:"id"`
	RunAt       *string         `json:"run_at"`
	Delay       *string         `json:"delay"`
	Payload     json.RawMessage `json:"payload"`
	CallbackURL *string         `json:"callback_url"`
	CallbackSettings
	FlowKey     *string `json:"flow_key"`
	FailureURL  *string `json:"failure_url"`
	OnConflict  *string `json:"on_conflict"`
	MaxDelay    *string `json:"max_delay"`
	DedupKey    *string `json:"dedup_key"`
	DedupWindow *string `json:"dedup_window"`

	// success_url: told of the delivery (docs/callbacks.md)
	SuccessURL *string           `json:"success_url"`
	ExpiresAt  *string           `json:"expires_at"`
	TTL        *string           `json:"ttl"`
	Priority   *int              `json:"priority"`
	Labels     map[string]string `json:"labels"`
}

// rescheduleRequest is the body of PATCH /v1/topics/{topic}/jobs/{id}.
type rescheduleRequest struct {
	RunAt *string `json:"run_at"`
	Delay *string `json:"delay"`
}

// attemptResponse is one recorded attempt.
type attemptResponse struct {
	N          int     `json:"n"`
	At         string  `json:"at"`
	DurationMS float64 `json:"duration_ms"`
	Status     int     `json:"status,omitempty"`
	Error      string  `json:"error,omitempty"`
	Response   string  `json:"response,omitempty"`
	Event      string  `json:"event,omitempty"`
	// ResponseHeaders are the answer's Content-Type, Retry-After and
	// Location, those it had.
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
}

// jobResponse is a job as the API shows it, with the values of
// secret-looking headers masked.
//
// Kind, State, RunAt, CreatedAt and Attempts are absent only from the
// answer to a duplicate create whose first job's record is gone (past its
// retention): it shows id, topic, tenant and result (JobForgotten in
// openapi.yaml).
type jobResponse struct {
	ID     string `json:"id"`
	Topic  string `json:"topic"`
	Tenant string `json:"tenant"`
	// Kind is notification for a failure or success notification that
	// kairos made of another job's end, job for the others.
	Kind      kairos.Kind  `json:"kind,omitempty"`
	State     kairos.State `json:"state,omitempty"`
	RunAt     string       `json:"run_at,omitempty"`
	NextRunAt string       `json:"next_run_at,omitempty"`
	CreatedAt string       `json:"created_at,omitempty"`
	DoneAt    string       `json:"done_at,omitempty"`
	Attempts  attemptCount `json:"attempts,omitzero"`
	// ReplayedAfter is the attempts made before the job's last replay;
	// max_attempts counts those after it.
	ReplayedAfter int    `json:"replayed_after,omitempty"`
	CallbackURL   string `json:"callback_url,omitempty"`
	CallbackSettingsResponse
	FlowKey     string            `json:"flow_key,omitempty"`
	FailureURL  string            `json:"failure_url,omitempty"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	LastAttempt *attemptResponse  `json:"last_attempt,omitempty"`
	AttemptLog  []attemptResponse `json:"attempt_log,omitempty"`
	// Result is set in the answers to creates only: what the create did
	// (rdb.CreateResult: created, replaced, kept, debounced, duplicate).
	Result string `json:"result,omitempty"`

	// success_url: told of the delivery (docs/callbacks.md)
	SuccessURL string            `json:"success_url,omitempty"`
	ExpiresAt  string            `json:"expires_at,omitempty"`
	Priority   int               `json:"priority,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// attemptCount is a job's attempts, shown even when 0; attemptsUnknown
// leaves them out (a forgotten job's).
type attemptCount int

const attemptsUnknown attemptCount = -1

// IsZero reports whether the count is unknown, for omitzero.
func (n attemptCount) IsZero() bool { return n < 0 }

const (
	resultCreated  = string(rdb.ResultCreated)
	resultReplaced = string(rdb.ResultReplaced)
)

// upserted shows the outcome of a create: the job with its result, and the
// status that says whether it created one (201) or found one (200: replaced,
// debounced, kept or duplicate).
func upserted(res rdb.BatchResult) (jobResponse, int) {
	v := jobView(res.Job)
	if res.Job.State == "" { // a duplicate whose first job's record is gone
		v = jobResponse{ID: res.Job.ID, Topic: res.Job.Topic, Tenant: res.Job.Tenant, Attempts: attemptsUnknown}
	}
	v.Result = string(res.Result)
	if res.Result == rdb.ResultCreated {
		return v, http.StatusCreated
	}
	return v, http.StatusOK
}

func jobView(j kairos.Job) jobResponse {
	v := jobResponse{
		ID: j.ID, Topic: j.Topic, Tenant: j.Tenant, Kind: kairos.KindOf(j.ID), State: j.State, RunAt: formatTime(j.RunAt),
		CreatedAt: formatTime(j.CreatedAt), DoneAt: formatTime(j.DoneAt), Attempts: attemptCount(j.Attempts),
		ReplayedAfter: j.ReplayedAfter, CallbackURL: maskURL(j.CallbackURL), CallbackSettingsResponse: jobSettings(&j).view(),
		FlowKey: j.FlowKey, FailureURL: maskURL(j.FailureURL), Payload: payloadJSON(j), SuccessURL: maskURL(j.SuccessURL),
		ExpiresAt: formatTime(j.ExpiresAt), Priority: j.Priority,
		Labels: j.Labels,
	}
	if j.State.Pending() {
		v.NextRunAt = formatTime(j.NextRunAt)
	}
	for _, a := range j.Log {
		v.AttemptLog = append(v.AttemptLog, attemptResponse{
			N: a.N, At: formatTime(a.At), DurationMS: float64(a.Duration.Microseconds()) / 1000,
			Status: a.Status, Error: a.Error, Response: a.Response, Event: a.Event,
			ResponseHeaders: a.ResponseHeaders,
		})
	}
	for i := len(v.AttemptLog) - 1; i >= 0; i-- {
		if v.AttemptLog[i].Event == "" { // the last attempt, not a replay
			last := v.AttemptLog[i]
			v.LastAttempt = &last
			break
		}
	}
	return v
}

// ownHeaders returns the headers j sets itself, unmasked: its Headers
// and, when it sets one, its Content-Type (given as headers.Content-Type
// and kept apart by toJob).
func ownHeaders(j kairos.Job) map[string]string { return jobSettings(&j).ownHeaders() }

// payloadJSON shows the stored body as JSON: as is when it is JSON, else as
// a JSON string.
func payloadJSON(j kairos.Job) json.RawMessage {
	if len(j.Payload) == 0 {
		return nil
	}
	if json.Valid(j.Payload) {
		return j.Payload
	}
	b, _ := json.Marshal(string(j.Payload))
	return b
}

// toJob validates a create request against now (the Redis clock);
// allowPrivate lets its callback URL name a private address. A batch puts
// its item's prefix on the field names of the error (prefixed).
func (req jobRequest) toJob(tenant, topic string, now time.Time, maxPayload int64, allowPrivate bool) (kairos.Job, error) {
	var fe fieldErrors
	j := kairos.Job{JobKey: kairos.JobKey{Tenant: tenant, Topic: topic}}
	if req.ID != nil {
		if !validID(*req.ID) {
			fe.add("id", "%q is not a valid job id: %s", *req.ID, idRule)
		} else if of, mark, ok := kairos.ParseNotice(*req.ID); ok {
			fe.add("id", "%q has the form of a notification of job %q: ids ending in '%s' and digits are reserved for them; use another separator", *req.ID, of, mark)
		} else if sid, ok := kairos.ScheduleOf(*req.ID); ok {
			fe.add("id", "%q has the form of an occurrence of schedule %q: ids ending in '@' and digits are reserved for schedules' occurrences; use another separator", *req.ID, sid)
		}
		j.ID = *req.ID
	} else {
		j.ID = newID()
	}
	j.RunAt = schedule(&fe, "", req.RunAt, req.Delay, now, true)
	if req.CallbackURL != nil {
		checkURL(&fe, "callback_url", *req.CallbackURL, allowPrivate)
		j.CallbackURL = *req.CallbackURL
	}
	req.CallbackSettings.check(&fe, "", jobSettings(&j))
	if req.FlowKey != nil {
		j.FlowKey = checkFlowKey(&fe, "flow_key", *req.FlowKey)
	}
	if req.FailureURL != nil {
		checkURL(&fe, "failure_url", *req.FailureURL, allowPrivate)
		j.FailureURL = *req.FailureURL
	}
	if req.SuccessURL != nil {
		checkURL(&fe, "success_url", *req.SuccessURL, allowPrivate)
		j.SuccessURL = *req.SuccessURL
	}
	j.ExpiresAt = req.expiry(&fe, j.RunAt, now)
	j.Priority = req.priority(&fe)
	j.Labels = checkLabels(&fe, "labels", req.Labels)
	if _, ok := j.Labels[kairos.LabelSubscription]; ok {
		fe.add("labels."+kairos.LabelSubscription, "reserved for fan-out: kairos gives each delivery of a message this label, naming its subscription")
	}
	j.Create = req.createOptions(&fe)
	if j.Create.DedupKey != "" && req.ID != nil {
		fe.add("dedup_key", "not with id: give dedup_key and let kairos pick the id (it is in the answer), or give an id and on_conflict")
	}
	j.Payload = body(req.Payload, j.ContentType)
	if int64(len(j.Payload)) > maxPayload {
		return j, payloadTooLarge("payload", len(j.Payload), maxPayload)
	}
	if msg := checkPayload(req.Payload); msg != "" {
		fe.add("payload", "%s", msg)
	}
	return j, fe.err()
}

// createOptions reads on_conflict, max_delay, dedup_key and dedup_window.
func (req jobRequest) createOptions(fe *fieldErrors) kairos.CreateOptions {
	var o kairos.CreateOptions
	if req.OnConflict != nil {
		switch c := kairos.OnConflict(*req.OnConflict); c {
		case kairos.ConflictReplace, kairos.ConflictKeep, kairos.ConflictDebounce:
			o.OnConflict = c
		default:
			fe.add("on_conflict", "%q is not one: allowed replace (the default), keep or debounce", *req.OnConflict)
		}
	}
	switch {
	case req.MaxDelay != nil && o.OnConflict != kairos.ConflictDebounce:
		fe.add("max_delay", "only with on_conflict: debounce")
	case req.MaxDelay != nil:
		o.MaxDelay = parseDuration(fe, "max_delay", *req.MaxDelay, time.Millisecond, kairos.MaxDebounceDelay)
	case o.OnConflict == kairos.ConflictDebounce:
		fe.add("max_delay", "required with on_conflict: debounce: a duration up to %s (the job's time never moves past its first create's time plus it)", fmtDuration(kairos.MaxDebounceDelay))
	}
	if req.DedupKey != nil {
		if n := utf8.RuneCountInString(*req.DedupKey); n == 0 || n > kairos.MaxDedupKey || !utf8.ValidString(*req.DedupKey) || strings.ContainsFunc(*req.DedupKey, unicode.IsControl) {
			fe.add("dedup_key", "use 1-%d characters of UTF-8 text, no control characters", kairos.MaxDedupKey)
		} else if o.OnConflict != "" {
			fe.add("on_conflict", "not with dedup_key: a create with a dedup_key has no id that could conflict")
		}
		o.DedupKey = *req.DedupKey
	}
	switch {
	case req.DedupWindow != nil && req.DedupKey == nil:
		fe.add("dedup_window", "only with dedup_key")
	case req.DedupWindow != nil:
		o.DedupWindow = parseDuration(fe, "dedup_window", *req.DedupWindow, time.Second, kairos.MaxDedupWindow)
	case req.DedupKey != nil:
		o.DedupWindow = kairos.DefaultDedupWindow
	}
	return o
}

// body turns the request's payload into the callback body: JSON as sent,
// except that a JSON string sent with a non-JSON Content-Type is sent as
// its text (a form body, say).
func body(p json.RawMessage, contentType string) []byte {
	if len(p) == 0 || string(p) == "null" {
		return nil
	}
	if contentType != "" && p[0] == '"' {
		mt, _, _ := mime.ParseMediaType(contentType)
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			var s string
			if json.Unmarshal(p, &s) == nil {
				return []byte(s)
			}
		}
	}
	return []byte(p)
}

// schedule reads at most one of run_at and delay; neither means now when
// orNow, and is refused otherwise (a reschedule must say where to). Each
// rounds up to the millisecond: a delay never lands before now + delay.
func schedule(fe *fieldErrors, prefix string, runAt, delay *string, now time.Time, orNow bool) time.Time {
	switch {
	case runAt != nil && delay != nil:
		fe.add(prefix+"run_at", "give either run_at or delay, not both")
	case runAt != nil:
		return parseRunAt(fe, prefix+"run_at", *runAt, now)
	case delay != nil:
		d := parseDuration(fe, prefix+"delay", *delay, 0, maxFuture)
		return ceilMS(now.Add(d)).UTC()
	case orNow:
		return ceilMS(now).UTC()
	default:
		fe.add(prefix+"run_at", "required: give run_at (RFC 3339 time) or delay (duration such as \"30m\")")
	}
	return time.Time{}
}

func newID() string { return randomID("job_") }

// randomID is prefix and 16 random characters of lowercase base32: the id
// of a job, or of a message, that its create names none for.
func randomID(prefix string) string {
	var b [10]byte
	rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// createJob handles POST /v1/topics/{topic}/jobs.
func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req jobRequest
	if err := s.decode(w, r, jobBody(s.cfg.MaxPayload), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := req.toJob(tenant, topic, s.store.Now(), s.cfg.MaxPayload, s.cfg.AllowPrivate)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, known, err := s.jobTopic(r.Context(), tenant, topic)
	if err == nil {
		err = needCallback(t, known, j)
	}
	release := func() {}
	if err == nil {
		release, err = s.needPending(r.Context(), tenant)
	}
	defer release()
	if err == nil {
		err = s.ensureTopic(r.Context(), t, known)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.dedupID(&j)
	var end func(error)
	j.TraceParent, j.TraceState, end = s.startCreate(r, tenant, topic, j.ID, 1)
	res := s.store.Upsert(r.Context(), j)
	end(res.Err)
	if res.Err != nil {
		s.writeError(w, r, res.Err)
		return
	}
	v, status := upserted(res)
	writeJSON(w, status, v)
}

// dedupID gives a create with a dedup key its id: one in the key's shard.
func (s *Server) dedupID(j *kairos.Job) {
	if j.Create.DedupKey != "" {
		j.ID = s.store.DedupID(j.Tenant, j.Topic, j.Create.DedupKey, newID)
	}
}

func (s *Server) jobTarget(r *http.Request) (kairos.JobKey, error) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		return kairos.JobKey{}, err
	}
	id := chi.URLParam(r, "id")
	if !validID(id) {
		return kairos.JobKey{}, fmt.Errorf("job %q: %w", id, kairos.ErrNotFound)
	}
	return kairos.JobKey{Tenant: tenant, Topic: topic, ID: id}, nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	key, err := s.jobTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reveal, err := revealHeaders(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.store.GetJob(r.Context(), key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := jobView(j)
	if reveal {
		v.Headers = ownHeaders(j)
		v.CallbackURL, v.FailureURL, v.SuccessURL = j.CallbackURL, j.FailureURL, j.SuccessURL
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) rescheduleJob(w http.ResponseWriter, r *http.Request) {
	key, err := s.jobTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req rescheduleRequest
	if err := s.decode(w, r, 4<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var fe fieldErrors
	at := schedule(&fe, "", req.RunAt, req.Delay, s.store.Now(), false)
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.store.Reschedule(r.Context(), key, at)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobView(j))
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	key, err := s.jobTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	was, sub, delivery := s.deliveryBefore(r.Context(), key)
	if err := s.store.Cancel(r.Context(), key); err != nil {
		s.writeError(w, r, err)
		return
	}
	if delivery {
		s.deliveryMoved(r.Context(), was, sub, kairos.StateCancelled)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) retryJob(w http.ResponseWriter, r *http.Request) {
	key, err := s.jobTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.needPending(r.Context(), key.Tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	was, sub, delivery := s.deliveryBefore(r.Context(), key)
	j, err := s.store.Replay(r.Context(), key)
	release()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if delivery {
		s.deliveryMoved(r.Context(), was, sub, j.State)
	}
	writeJSON(w, http.StatusAccepted, jobView(j))
}
