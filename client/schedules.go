package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"
)

// CatchUp is what fires for the occurrences of a schedule that fell while
// no kairos ran (or that were claimed more than a minute late).
type CatchUp string

// The catch-up rules.
const (
	CatchUpOne  CatchUp = "one"  // one occurrence for all the missed ones (the default)
	CatchUpNone CatchUp = "none" // none of them: the schedule goes on with the next future one
	CatchUpAll  CatchUp = "all"  // each of them, at most 100
)

// ScheduleRequest is the body of [Client.PutSchedule]: exactly one of Cron
// and Every, then the settings of its occurrences as a job's (zero fields
// inherit the topic's).
//
// Cron has 5 fields (minute hour day-of-month month day-of-week), or 6 with
// a leading seconds field, or is a macro such as "@daily", read in
// Timezone (an IANA name; default UTC). Every is an interval of at least
// a second, counted from StartAt, or from the creation.
type ScheduleRequest struct {
	Cron        string          `json:"cron,omitempty"`
	Every       Duration        `json:"every,omitzero"`
	Timezone    string          `json:"timezone,omitempty"`
	StartAt     time.Time       `json:"start_at,omitzero"`
	EndAt       time.Time       `json:"end_at,omitzero"`
	CatchUp     CatchUp         `json:"catch_up,omitempty"`
	Paused      bool            `json:"paused,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	CallbackURL string          `json:"callback_url,omitempty"`
	CallbackSettings
	// Overlap is what an instant does while the previous occurrence is
	// still active or retrying ("" is OverlapAllow).
	Overlap Overlap `json:"overlap,omitempty"`
	// Jitter delays each occurrence by [0, Jitter), the same for an
	// instant every time; shorter than the gaps between instants, at most 7d.
	Jitter Duration `json:"jitter,omitzero"`
	// MaxRuns completes the schedule after that many occurrences fired
	// (0: no bound).
	MaxRuns int               `json:"max_runs,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"` // carried by every occurrence
}

// MarshalJSON encodes r as the API's schedule request, its times as given
// (the server keeps them to the millisecond: start_at rounded up, end_at
// down) and its payload as given.
func (r ScheduleRequest) MarshalJSON() ([]byte, error) {
	type plain ScheduleRequest // without this method
	w := struct {
		plain
		StartAt string          `json:"start_at,omitempty"`
		EndAt   string          `json:"end_at,omitempty"`
		Payload json.RawMessage `json:"payload,omitempty"` // spliced in below, as is
	}{plain: plain(r), StartAt: wireTime(r.StartAt), EndAt: wireTime(r.EndAt)}
	b, err := marshal(w)
	if err != nil {
		return nil, err
	}
	return withPayload(b, r.Payload, "schedule")
}

// Schedule is a recurring schedule as the API shows it: its pattern, the
// next fire instants, the last occurrence and the occurrences' settings.
// Each occurrence is a job of the topic with the id
// "<schedule id>@<unix ms of its instant>".
type Schedule struct {
	ID           string          `json:"id"`
	Topic        string          `json:"topic"`
	Tenant       string          `json:"tenant"`
	Cron         string          `json:"cron,omitempty"`
	Every        Duration        `json:"every,omitzero"`
	Timezone     string          `json:"timezone"`
	StartAt      Time            `json:"start_at,omitzero"`
	EndAt        Time            `json:"end_at,omitzero"`
	CatchUp      CatchUp         `json:"catch_up"`
	Paused       bool            `json:"paused"`
	NextRuns     []Time          `json:"next_runs"`                // the next 5; none while paused or ended
	NextRunsZone []string        `json:"next_runs_zone,omitempty"` // the zone's abbreviation at each of NextRuns ("CET")
	PendingJob   string          `json:"pending_job,omitempty"`    // the id of the occurrence waiting to fire
	LastRun      *LastRun        `json:"last_run,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	CallbackURL  string          `json:"callback_url,omitempty"`
	CallbackSettings
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
	// Result is set in the answer to PutSchedule only: ResultCreated or
	// ResultReplaced.
	Result  string   `json:"result,omitempty"`
	Overlap Overlap  `json:"overlap"`
	Jitter  Duration `json:"jitter,omitzero"`
	MaxRuns int      `json:"max_runs,omitempty"`
	// Runs and Skipped are counted for a schedule with MaxRuns or an
	// overlap rule other than allow.
	Runs    *int   `json:"runs,omitempty"`
	Skipped *int64 `json:"skipped,omitempty"`
	// State is "active", "paused" or "completed" (MaxRuns fired).
	State  string            `json:"state"`
	Labels map[string]string `json:"labels,omitempty"`
}

// LastRun is the last occurrence a schedule fired, and how its job went
// (State and LastAttempt are empty once the job is gone). Trigger says
// what fired it: "pattern", "manual" (TriggerSchedule) or "backfill".
type LastRun struct {
	At          Time     `json:"at"`
	JobID       string   `json:"job_id"`
	Trigger     string   `json:"trigger"`
	State       State    `json:"state,omitempty"`
	LastAttempt *Attempt `json:"last_attempt,omitempty"`
}

// ScheduleList is a page of a topic's schedules by id. NextCursor, passed
// back as [ListOptions.Cursor], fetches the next page.
type ScheduleList struct {
	Schedules  []Schedule `json:"schedules"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// PutSchedule creates the schedule id on topic, or replaces it whole: its
// pending occurrence is dropped (unless it is being delivered) and the
// next instant of the new pattern is filed. The answer's Result says
// which. It is retried as the policy allows.
func (c *Client) PutSchedule(ctx context.Context, topic, id string, req ScheduleRequest) (*Schedule, error) {
	body, err := req.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return c.schedule(ctx, request{method: http.MethodPut, path: topicPath(topic, "schedules", id), body: body, retry: true})
}

// GetSchedule returns a schedule with its next runs and last run.
func (c *Client) GetSchedule(ctx context.Context, topic, id string) (*Schedule, error) {
	return c.schedule(ctx, get(topicPath(topic, "schedules", id), c.revealQuery()))
}

// ListSchedules returns a page of the topic's schedules, by id; the
// options' State is not used.
func (c *Client) ListSchedules(ctx context.Context, topic string, opts ListOptions) (*ScheduleList, error) {
	var page ScheduleList
	if _, err := c.do(ctx, get(topicPath(topic, "schedules"), opts.query(false)), &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllSchedules iterates over the topic's schedules, page after page. It
// stops at the first error, which it yields.
func (c *Client) AllSchedules(ctx context.Context, topic string, opts ListOptions) iter.Seq2[Schedule, error] {
	return pages(opts, func(o ListOptions) ([]Schedule, string, error) {
		page, err := c.ListSchedules(ctx, topic, o)
		if err != nil {
			return nil, "", err
		}
		return page.Schedules, page.NextCursor, nil
	})
}

// DeleteSchedule removes a schedule and its pending occurrence; an
// occurrence already being delivered finishes.
func (c *Client) DeleteSchedule(ctx context.Context, topic, id string) error {
	_, err := c.do(ctx, del(topicPath(topic, "schedules", id)), nil)
	return err
}

// PauseSchedule stops a schedule: its pending occurrence is dropped and
// nothing fires until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, topic, id string) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodPost, path: topicPath(topic, "schedules", id, "pause"), retry: true})
}

// ResumeSchedule files the first instant after now of a paused schedule:
// what fell while it was paused does not fire.
func (c *Client) ResumeSchedule(ctx context.Context, topic, id string) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodPost, path: topicPath(topic, "schedules", id, "resume"), retry: true})
}

// TriggerSchedule fires one occurrence now, outside the pattern, and
// returns its job. It is sent once: a retry would fire another.
func (c *Client) TriggerSchedule(ctx context.Context, topic, id string) (*Job, error) {
	var j Job
	if _, err := c.do(ctx, request{method: http.MethodPost, path: topicPath(topic, "schedules", id, "trigger")}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (c *Client) schedule(ctx context.Context, r request) (*Schedule, error) {
	var s Schedule
	if _, err := c.do(ctx, r, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
