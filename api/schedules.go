package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/duration"
	recur "github.com/kairos-sh/kairos/internal/schedule"
)

// scheduleRequest is the body of PUT /v1/topics/{topic}/schedules/{id}:
// the pattern, then the occurrences' settings as a job's.
type scheduleRequest struct {
	Cron     *string `json:"cron"`
	Every    *string `json:"every"`
	Timezone *string `json:"timezone"`
	StartAt  *string `json:"start_at"`
	EndAt    *string `json:"end_at"`
	CatchUp  *string `json:"catch_up"`
	Paused   *bool   `json:"paused"`

	// the occurrences' settings, as a job request's (jobRequest)
	Payload     json.RawMessage `json:"payload"`
	CallbackURL *string         `json:"callback_url"`
	CallbackSettings

	Overlap *string           `json:"overlap"`
	Jitter  *string           `json:"jitter"`
	MaxRuns *int              `json:"max_runs"`
	Labels  map[string]string `json:"labels"`
}

// scheduleResponse is a schedule as the API shows it.
type scheduleResponse struct {
	ID       string         `json:"id"`
	Topic    string         `json:"topic"`
	Tenant   string         `json:"tenant"`
	Cron     string         `json:"cron,omitempty"`
	Every    string         `json:"every,omitempty"`
	Timezone string         `json:"timezone"`
	StartAt  string         `json:"start_at,omitempty"`
	EndAt    string         `json:"end_at,omitempty"`
	CatchUp  kairos.CatchUp `json:"catch_up"`
	Paused   bool           `json:"paused"`
	NextRuns []string       `json:"next_runs"`
	// NextRunsZone names the schedule's zone at each of NextRuns as Go
	// (and so the CLI) abbreviates it: CET, CEST, EST, +04.
	NextRunsZone []string         `json:"next_runs_zone"`
	PendingJob   string           `json:"pending_job,omitempty"`
	LastRun      *lastRunResponse `json:"last_run,omitempty"`
	Payload      json.RawMessage  `json:"payload,omitempty"`
	CallbackURL  string           `json:"callback_url,omitempty"`
	CallbackSettingsResponse
	CreatedAt string         `json:"created_at"`
	UpdatedAt string         `json:"updated_at"`
	Result    string         `json:"result,omitempty"`
	Overlap   kairos.Overlap `json:"overlap"`
	Jitter    string         `json:"jitter,omitempty"`
	MaxRuns   int            `json:"max_runs,omitempty"`
	// Runs and Skipped are counted for a schedule with max_runs or an
	// overlap rule other than allow.
	Runs    *int              `json:"runs,omitempty"`
	Skipped *int64            `json:"skipped,omitempty"`
	State   string            `json:"state"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// lastRunResponse is the last occurrence fired, by the pattern or a manual
// trigger (Trigger says which), and how it went.
type lastRunResponse struct {
	At          string           `json:"at"`
	JobID       string           `json:"job_id"`
	Trigger     string           `json:"trigger"`
	State       kairos.State     `json:"state,omitempty"`
	LastAttempt *attemptResponse `json:"last_attempt,omitempty"`
}

// scheduleListResponse is a page of schedules.
type scheduleListResponse struct {
	Schedules  []scheduleResponse `json:"schedules"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// nextRunsShown is how many fire instants a schedule's answer lists.
const nextRunsShown = 5

// parsePattern parses sc's pattern with every as given (so that its
// errors name what the request said).
func parsePattern(sc kairos.Schedule, every string) (*recur.Pattern, error) {
	return recur.Parse(sc.Cron, every, sc.Timezone, recur.Anchor(sc), sc.StartAt, sc.EndAt)
}

// toSchedule validates a put request against now.
func (req scheduleRequest) toSchedule(tenant, topic, id string, now time.Time, maxPayload int64, allowPrivate bool) (kairos.Schedule, error) {
	var fe fieldErrors
	sc := kairos.Schedule{Tenant: tenant, Topic: topic, ID: id, CatchUp: kairos.CatchUpOne}
	if req.Cron != nil {
		sc.Cron = *req.Cron
	}
	every := ""
	if req.Every != nil {
		every = *req.Every
	}
	if req.Timezone != nil {
		sc.Timezone = *req.Timezone
	}
	if req.StartAt != nil {
		sc.StartAt = parseRunAt(&fe, "start_at", *req.StartAt, now)
	}
	if req.EndAt != nil {
		// the last instant it may fire: a finer time rounds down, so
		// that nothing fires after it
		sc.EndAt = parseTime(&fe, "end_at", *req.EndAt, now, floorMS)
	}
	if req.CatchUp != nil {
		switch cu := kairos.CatchUp(*req.CatchUp); cu {
		case kairos.CatchUpOne, kairos.CatchUpNone, kairos.CatchUpAll:
			sc.CatchUp = cu
		default:
			fe.add("catch_up", "%q is not a catch-up rule: use one (fire once for the occurrences missed while kairos was down; the default), none, or all (each, at most %d)", *req.CatchUp, kairos.MaxCatchUp)
		}
	}
	if req.Paused != nil {
		sc.Paused = *req.Paused
	}
	req.firing(&fe, &sc)
	delay := "0s"
	jr := jobRequest{ID: &id, Delay: &delay, Payload: req.Payload, CallbackURL: req.CallbackURL,
		CallbackSettings: req.CallbackSettings, Labels: req.Labels}
	j, err := jr.toJob(tenant, topic, now, maxPayload, allowPrivate)
	var ve *ValidationError
	switch {
	case errors.As(err, &ve) && ve.Status == http.StatusRequestEntityTooLarge:
		return kairos.Schedule{}, ve // the payload, as for a job: 413
	case errors.As(err, &ve):
		for _, f := range ve.Errors {
			if f.Field != "id" && f.Field != "run_at" {
				fe = append(fe, f)
			}
		}
	case err != nil:
		return kairos.Schedule{}, err
	}
	sc.Job = j
	sc.CreatedAt = now
	if len(fe) == 0 {
		p, err := parsePattern(sc, every)
		var pe *recur.FieldError
		switch {
		case errors.As(err, &pe):
			fe.add(pe.Field, "%s", pe.Reason)
		case err != nil:
			return kairos.Schedule{}, err
		case len(p.NextN(now, 1)) == 0:
			// Parse checks that the pattern fires from start_at on; a
			// start_at in the past leaves end_at free to end it already
			fe.add("end_at", "%s is before the schedule's next instant after now (%s): it would never fire", formatTime(sc.EndAt), formatTime(now))
		default:
			checkJitter(&fe, sc, p, now)
		}
		if every != "" {
			sc.Every, _ = duration.Parse(every) // Parse accepted it
		}
	}
	if err := fe.err(); err != nil {
		return kairos.Schedule{}, err
	}
	return sc, nil
}

func (s *Server) scheduleTarget(r *http.Request) (tenant, topic, id string, err error) {
	tenant, topic, err = s.topicTarget(r)
	if err != nil {
		return "", "", "", err
	}
	id = chi.URLParam(r, "id")
	if !validID(id) {
		return "", "", "", errorf(http.StatusNotFound, "schedule "+id+" not found: "+idRule)
	}
	return tenant, topic, id, nil
}

// putSchedule handles PUT /v1/topics/{topic}/schedules/{id}.
func (s *Server) putSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, topic, id, err := s.scheduleTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, ok := kairos.ScheduleOf(id); ok {
		s.writeError(w, r, &ValidationError{Errors: []FieldError{{Field: "id", Message: "ids ending in '@' and digits are kept for occurrences: use another separator"}}})
		return
	}
	var req scheduleRequest
	if err := s.decode(w, r, jobBody(s.cfg.MaxPayload), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.store.Now()
	sc, err := req.toSchedule(tenant, topic, id, now, s.cfg.MaxPayload, s.cfg.AllowPrivate)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, known, err := s.jobTopic(r.Context(), tenant, topic)
	if err == nil {
		err = needCallback(t, known, sc.Job)
	}
	release := func() {}
	if err == nil {
		release, err = s.needPending(r.Context(), tenant)
	}
	defer release()
	if err == nil {
		err = s.ensureTopic(r.Context(), t, known)
	}
	if err == nil {
		if old, gerr := s.store.GetSchedule(r.Context(), tenant, topic, id); gerr == nil {
			sc.CreatedAt, sc.LastTriggered = old.CreatedAt, old.LastTriggered
			sc.LastBackfilled, sc.BackfilledAt = old.LastBackfilled, old.BackfilledAt
		}
	}
	var replaced bool
	if err == nil {
		replaced, err = s.store.PutSchedule(r.Context(), sc)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.scheduleView(r, tenant, topic, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	v.Result = resultCreated
	if replaced {
		status, v.Result = http.StatusOK, resultReplaced
	}
	writeJSON(w, status, v)
}

// scheduleView reads a schedule and shows it, with its next runs and how
// its last occurrence went.
func (s *Server) scheduleView(r *http.Request, tenant, topic, id string) (scheduleResponse, error) {
	sc, err := s.store.GetSchedule(r.Context(), tenant, topic, id)
	if err != nil {
		return scheduleResponse{}, err
	}
	return s.showSchedule(r, sc)
}

func (s *Server) showSchedule(r *http.Request, sc kairos.Schedule) (scheduleResponse, error) {
	jv := jobView(sc.Job)
	v := scheduleResponse{ID: sc.ID, Topic: sc.Topic, Tenant: sc.Tenant, Cron: sc.Cron, Timezone: sc.Timezone,
		StartAt: formatTime(sc.StartAt), EndAt: formatTime(sc.EndAt), CatchUp: sc.CatchUp, Paused: sc.Paused,
		NextRuns: []string{}, NextRunsZone: []string{}, Payload: jv.Payload, CallbackURL: jv.CallbackURL,
		CallbackSettingsResponse: jv.CallbackSettingsResponse,
		CreatedAt:                formatTime(sc.CreatedAt), UpdatedAt: formatTime(sc.UpdatedAt), Labels: jv.Labels}
	if v.Timezone == "" {
		v.Timezone = "UTC"
	}
	if sc.Every > 0 {
		v.Every = sc.Every.String()
	}
	if !sc.Paused && !sc.Pending.IsZero() {
		v.PendingJob = kairos.OccurrenceID(sc.ID, sc.Pending)
		runs := []time.Time{sc.Pending}
		if p, err := recur.Of(sc); err == nil {
			runs = append(runs, p.NextN(sc.Pending, nextRunsShown-1)...)
		}
		zone, err := time.LoadLocation(v.Timezone) // checked when the schedule was saved
		if err != nil {
			zone = time.UTC
		}
		for _, t := range runs {
			abbr, _ := t.In(zone).Zone()
			v.NextRuns, v.NextRunsZone = append(v.NextRuns, formatTime(t)), append(v.NextRunsZone, abbr)
		}
	}
	if at, trigger := lastRun(sc); !at.IsZero() {
		lr := &lastRunResponse{At: formatTime(at), JobID: kairos.OccurrenceID(sc.ID, at), Trigger: trigger}
		j, err := s.store.GetJob(r.Context(), kairos.JobKey{Tenant: sc.Tenant, Topic: sc.Topic, ID: lr.JobID})
		switch {
		case err == nil:
			lr.State, lr.LastAttempt = j.State, jobView(j).LastAttempt
		case !errors.Is(err, kairos.ErrNotFound): // gone after its retention: shown without its state
			return scheduleResponse{}, err
		}
		v.LastRun = lr
	}
	showFiring(&v, sc)
	return v, nil
}

// The triggers of a last run.
const (
	triggerPattern  = "pattern"
	triggerManual   = "manual"
	triggerBackfill = "backfill"
)

// lastRun is the instant of the last occurrence sc fired, and what fired
// it: the later of the pattern's last and the last manual trigger (a
// trigger never takes an instant of the pattern, so they never tie).
func lastRun(sc kairos.Schedule) (time.Time, string) {
	// a backfill fires instants of the past: it is the last run when it
	// ran after the others fired
	if !sc.BackfilledAt.IsZero() && sc.BackfilledAt.After(sc.LastTriggered) && sc.BackfilledAt.After(sc.LastFired) {
		return sc.LastBackfilled, triggerBackfill
	}
	if sc.LastTriggered.After(sc.LastFired) {
		return sc.LastTriggered, triggerManual
	}
	return sc.LastFired, triggerPattern
}

// getSchedule handles GET /v1/topics/{topic}/schedules/{id}.
func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, topic, id, err := s.scheduleTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reveal, err := revealHeaders(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := s.store.GetSchedule(r.Context(), tenant, topic, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.showSchedule(r, sc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if reveal {
		v.Headers, v.CallbackURL = ownHeaders(sc.Job), sc.Job.CallbackURL
	}
	writeJSON(w, http.StatusOK, v)
}

// listSchedules handles GET /v1/topics/{topic}/schedules?cursor=&limit=.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var fe fieldErrors
	limit := pageLimit(&fe, r.URL.Query().Get("limit"))
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.GetTopic(r.Context(), tenant, topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	scs, next, err := s.store.ListSchedules(r.Context(), tenant, topic, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := scheduleListResponse{Schedules: []scheduleResponse{}, NextCursor: next}
	for _, sc := range scs {
		v, err := s.showSchedule(r, sc)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Schedules = append(out.Schedules, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSchedule handles DELETE /v1/topics/{topic}/schedules/{id}.
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, topic, id, err := s.scheduleTarget(r)
	if err == nil {
		err = s.store.DeleteSchedule(r.Context(), tenant, topic, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pauseSchedule handles POST .../schedules/{id}/pause and /resume.
func (s *Server) pauseSchedule(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, topic, id, err := s.scheduleTarget(r)
		if err == nil {
			err = s.store.PauseSchedule(r.Context(), tenant, topic, id, pause)
		}
		var v scheduleResponse
		if err == nil {
			v, err = s.scheduleView(r, tenant, topic, id)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// triggerSchedule handles POST .../schedules/{id}/trigger: one occurrence
// now, outside the pattern. It answers the occurrence's job.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, topic, id, err := s.scheduleTarget(r)
	var j kairos.Job
	release := func() {}
	if err == nil {
		release, err = s.needPending(r.Context(), tenant)
	}
	if err == nil {
		j, err = s.store.TriggerSchedule(r.Context(), tenant, topic, id)
	}
	release()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := jobView(j)
	v.Result = resultCreated
	writeJSON(w, http.StatusCreated, v)
}
