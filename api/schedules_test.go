package api

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// A schedule over its life through the API: created with its next runs,
// replaced, read with and without its secret headers, listed page by
// page, paused, resumed, triggered and deleted.
func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	path := "/v1/topics/reports/schedules/"

	got := want[scheduleResponse](t, e.do(t, "PUT", path+"beat", acme, obj{
		"every": "90s", "payload": obj{"n": 1}, "headers": obj{"Authorization": "Bearer s3cret"}, "catch_up": "all",
	}), http.StatusCreated)
	var runs []string
	for i := 1; i <= 5; i++ {
		runs = append(runs, ms(t0.Add(time.Duration(i)*90*time.Second)))
	}
	first := t0.Add(90 * time.Second)
	if got.Result != resultCreated || got.Every != "1m30s" || got.Timezone != "UTC" || got.CatchUp != kairos.CatchUpAll ||
		got.PendingJob != kairos.OccurrenceID("beat", first) || got.CreatedAt != ms(t0) {
		t.Errorf("created schedule: %+v", got)
	}
	if d := cmp.Diff(runs, got.NextRuns); d != "" {
		t.Errorf("next_runs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"UTC", "UTC", "UTC", "UTC", "UTC"}, got.NextRunsZone); d != "" {
		t.Errorf("next_runs_zone (-want +got):\n%s", d)
	}
	if got.Headers["Authorization"] == "Bearer s3cret" {
		t.Errorf("the answer shows a secret header: %v", got.Headers)
	}

	// A cron pattern is read in its zone: 09:00 in Paris is 08:00 UTC in
	// November. Replacing keeps the creation time.
	e.clock.Add(time.Minute)
	got = want[scheduleResponse](t, e.do(t, "PUT", path+"daily", acme, obj{"cron": "0 9 * * *", "timezone": "Europe/Paris"}), http.StatusCreated)
	if got.NextRuns[0] != "2026-11-22T08:00:00.000Z" || got.NextRuns[4] != "2026-11-26T08:00:00.000Z" {
		t.Errorf("daily next_runs %v", got.NextRuns)
	}
	// Each named as Go (and the CLI) abbreviates Paris's zone then.
	if d := cmp.Diff([]string{"CET", "CET", "CET", "CET", "CET"}, got.NextRunsZone); d != "" {
		t.Errorf("daily next_runs_zone (-want +got):\n%s", d)
	}
	got = want[scheduleResponse](t, e.do(t, "PUT", path+"beat", acme, obj{"every": "1h", "headers": obj{"Authorization": "Bearer s3cret"}}), http.StatusOK)
	if got.Result != resultReplaced || got.CreatedAt != ms(t0) || got.UpdatedAt != ms(t0.Add(time.Minute)) || got.CatchUp != kairos.CatchUpOne {
		t.Errorf("replaced schedule: %+v", got)
	}
	// An interval counts from the creation, kept across the replace.
	if got.NextRuns[0] != ms(t0.Add(time.Hour)) {
		t.Errorf("replaced next_runs %v, want from %s", got.NextRuns, ms(t0.Add(time.Hour)))
	}
	revealed := want[scheduleResponse](t, e.do(t, "GET", path+"beat?reveal=headers", acme, nil), http.StatusOK)
	if revealed.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("reveal=headers shows %v", revealed.Headers)
	}

	// Pages of one, by id.
	var ids []string
	cursor := ""
	for range 3 {
		q := "?limit=1"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		page := want[scheduleListResponse](t, e.do(t, "GET", path[:len(path)-1]+q, acme, nil), http.StatusOK)
		for _, s := range page.Schedules {
			ids = append(ids, s.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if d := cmp.Diff([]string{"beat", "daily"}, ids); d != "" {
		t.Errorf("listed (-want +got):\n%s", d)
	}

	paused := want[scheduleResponse](t, e.do(t, "POST", path+"beat/pause", acme, nil), http.StatusOK)
	if !paused.Paused || len(paused.NextRuns) != 0 || paused.PendingJob != "" {
		t.Errorf("paused: %+v", paused)
	}
	e.clock.Add(2 * time.Hour) // 10:01 -> 12:01; the 11:00 and 12:00 runs fell while paused
	acme = e.token(t, "acme", false)
	resumed := want[scheduleResponse](t, e.do(t, "POST", path+"beat/resume", acme, nil), http.StatusOK)
	if resumed.Paused || len(resumed.NextRuns) != 5 || resumed.NextRuns[0] != ms(t0.Add(3*time.Hour)) {
		t.Errorf("resumed: %+v", resumed)
	}

	job := want[jobResponse](t, e.do(t, "POST", path+"beat/trigger", acme, nil), http.StatusCreated)
	now := e.clock.Now()
	if job.ID != kairos.OccurrenceID("beat", now) || job.State != kairos.StateReady || job.RunAt != ms(now) {
		t.Errorf("triggered job: %+v", job)
	}
	e.getJob(t, acme, "reports", job.ID)
	after := want[scheduleResponse](t, e.do(t, "GET", path+"beat", acme, nil), http.StatusOK)
	if after.PendingJob != resumed.PendingJob {
		t.Errorf("a trigger moved the pending occurrence: %s, was %s", after.PendingJob, resumed.PendingJob)
	}

	// Cancelling the pending occurrence skips that instant only; moving it
	// takes it out of the schedule, which goes on from its next instant.
	jobs := "/v1/topics/reports/jobs/"
	if res := e.do(t, "DELETE", jobs+resumed.PendingJob, acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE the pending occurrence: %d %s", res.Status, res.Body)
	}
	skipped := want[scheduleResponse](t, e.do(t, "GET", path+"beat", acme, nil), http.StatusOK)
	if skipped.PendingJob != kairos.OccurrenceID("beat", t0.Add(4*time.Hour)) {
		t.Errorf("after the cancel the pending occurrence is %s, want the next instant's", skipped.PendingJob)
	}
	moveTo := t0.Add(4*time.Hour + 30*time.Minute)
	moved := want[jobResponse](t, e.do(t, "PATCH", jobs+skipped.PendingJob, acme, obj{"run_at": ms(moveTo)}), http.StatusOK)
	if moved.RunAt != ms(moveTo) {
		t.Errorf("moved occurrence: %+v", moved)
	}
	if got := want[scheduleResponse](t, e.do(t, "GET", path+"beat", acme, nil), http.StatusOK); got.PendingJob != kairos.OccurrenceID("beat", t0.Add(5*time.Hour)) {
		t.Errorf("after the move the pending occurrence is %s, want the next instant's", got.PendingJob)
	}

	if res := e.do(t, "DELETE", path+"beat", acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	for _, req := range [][2]string{{"GET", path + "beat"}, {"DELETE", path + "beat"}, {"POST", path + "beat/pause"}, {"POST", path + "beat/trigger"}} {
		wantProblem(t, e.do(t, req[0], req[1], acme, nil), http.StatusNotFound)
	}
	// Another tenant sees none of it.
	other := e.token(t, "globex", false)
	wantProblem(t, e.do(t, "GET", path+"daily", other, nil), http.StatusNotFound)
}

// A bad schedule is a 400 naming the field, and changes nothing.
func TestScheduleRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	e.do(t, "PUT", "/v1/topics/reports/schedules/kept", acme, obj{"every": "1m"})
	future := ms(t0.Add(time.Hour))
	tests := []struct {
		name   string
		id     string
		body   any
		fields []string
		spec   bool // openapi.yaml refuses it too
	}{
		{"bad cron", "s", obj{"cron": "61 * * * *"}, []string{"cron"}, false},
		{"too many fields", "s", obj{"cron": "0 0 0 * * * *"}, []string{"cron"}, false},
		{"unknown macro", "s", obj{"cron": "@fortnightly"}, []string{"cron"}, false},
		{"unknown zone", "s", obj{"cron": "0 9 * * *", "timezone": "Europe/Atlantis"}, []string{"timezone"}, false},
		{"interval under a second", "s", obj{"every": "500ms"}, []string{"every"}, false},
		{"interval not a duration", "s", obj{"every": "daily"}, []string{"every"}, false},
		{"both cron and every", "s", obj{"cron": "@daily", "every": "1h"}, nil, false},
		{"neither cron nor every", "s", obj{"payload": 1}, nil, false},
		{"never fires", "s", obj{"cron": "0 0 30 2 *"}, []string{"cron"}, false},
		{"ends before it starts", "s", obj{"every": "1h", "start_at": future, "end_at": ms(t0.Add(30 * time.Minute))}, nil, false},
		{"bad catch-up", "s", obj{"every": "1h", "catch_up": "some"}, []string{"catch_up"}, true},
		{"bad start_at", "s", obj{"every": "1h", "start_at": "tomorrow"}, []string{"start_at"}, false},
		{"unknown field", "s", obj{"every": "1h", "cronn": "x"}, []string{"cronn"}, true},
		{"bad callback", "s", obj{"every": "1h", "callback_url": "ftp://x"}, []string{"callback_url"}, false},
		{"occurrence-like id", "s@1795257600000", obj{"every": "1h"}, []string{"id"}, false},
		{"replacing with a bad pattern", "kept", obj{"cron": "* * *"}, []string{"cron"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "PUT", "/v1/topics/reports/schedules/"+tt.id, acme, tt.body, specLenient())
			p := e.refused(t, res, before, http.StatusBadRequest, tt.fields, tt.spec)
			if len(p.Errors) == 0 || p.Errors[0].Message == "" {
				t.Errorf("problem names no field or reason: %+v", p)
			}
			t.Logf("%s: %s: %s", tt.name, p.Errors[0].Field, p.Errors[0].Message)
		})
	}
	if got := want[scheduleResponse](t, e.do(t, "GET", "/v1/topics/reports/schedules/kept", acme, nil), http.StatusOK); got.Every != "1m0s" {
		t.Errorf("kept schedule changed: %+v", got)
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/reports/schedules?limit="+strconv.Itoa(1000), acme, nil), http.StatusBadRequest)
	wantProblem(t, e.do(t, "GET", "/v1/topics/nope/schedules", acme, nil), http.StatusNotFound)
}

// start_at and end_at finer than a millisecond round inwards: the first
// instant may not come before start_at, the last not after end_at. every
// takes days.
func TestScheduleBoundsRoundInwards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	got := want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/reports/schedules/s", acme, obj{
		"every": "1d", "start_at": "2026-11-21T11:00:00.000000001Z", "end_at": "2026-12-21T11:00:00.000999999Z",
	}), http.StatusCreated)
	if got.StartAt != "2026-11-21T11:00:00.001Z" || got.EndAt != "2026-12-21T11:00:00.000Z" {
		t.Errorf("start_at %s end_at %s, want 2026-11-21T11:00:00.001Z and 2026-12-21T11:00:00.000Z", got.StartAt, got.EndAt)
	}
	if got.Every != "24h0m0s" || len(got.NextRuns) == 0 || got.NextRuns[0] != "2026-11-21T11:00:00.001Z" || got.NextRuns[1] != "2026-11-22T11:00:00.001Z" {
		t.Errorf("every %s next_runs %v", got.Every, got.NextRuns)
	}
}

// last_run shows the last occurrence fired, by the pattern or by a manual
// trigger, and says which; a replace keeps a trigger's, as it keeps the
// pattern's.
func TestScheduleLastRunShowsTrigger(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	path := "/v1/topics/reports/schedules/beat"
	get := func() *lastRunResponse {
		t.Helper()
		return want[scheduleResponse](t, e.do(t, "GET", path, acme, nil), http.StatusOK).LastRun
	}
	want[scheduleResponse](t, e.do(t, "PUT", path, acme, obj{"every": "90s"}), http.StatusCreated)
	if lr := get(); lr != nil {
		t.Fatalf("a schedule that never fired shows last_run %+v", lr)
	}

	// a trigger is the last run at once
	e.clock.Add(10 * time.Second)
	job := want[jobResponse](t, e.do(t, "POST", path+"/trigger", acme, nil), http.StatusCreated)
	if lr := get(); lr == nil || lr.Trigger != triggerManual || lr.JobID != job.ID || lr.At != ms(t0.Add(10*time.Second)) || lr.State != kairos.StateReady {
		t.Fatalf("after a trigger (job %s): last_run %+v, want that job, manual, ready", job.ID, lr)
	}
	// it is delivered: last_run says so
	e.deliveredJob(t, "acme", "reports", job.ID)
	if lr := get(); lr == nil || lr.Trigger != triggerManual || lr.State != kairos.StateDelivered {
		t.Fatalf("after the trigger's delivery: last_run %+v", lr)
	}

	// the pattern's first occurrence fires: it is the last run
	first := t0.Add(90 * time.Second)
	e.clock.Set(first)
	occ := e.next(t, "acme", "reports", kairos.OccurrenceID("beat", first))
	if lr := get(); lr == nil || lr.Trigger != triggerPattern || lr.JobID != occ.ID || lr.At != ms(first) || lr.State != kairos.StateActive {
		t.Fatalf("after the pattern fired %s: last_run %+v", occ.ID, lr)
	}

	// a trigger after it is the last run again, and a replace keeps it
	e.clock.Add(5 * time.Second)
	job = want[jobResponse](t, e.do(t, "POST", path+"/trigger", acme, nil), http.StatusCreated)
	want[scheduleResponse](t, e.do(t, "PUT", path, acme, obj{"every": "1h"}), http.StatusOK)
	if lr := get(); lr == nil || lr.Trigger != triggerManual || lr.JobID != job.ID {
		t.Fatalf("after a second trigger (job %s) and a replace: last_run %+v", job.ID, lr)
	}
}
