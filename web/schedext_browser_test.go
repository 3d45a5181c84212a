package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestAdminPageScheduleRulesAndBackfill: a schedule made in the page with
// an overlap rule, a jitter and max runs shows them; a backfill from the
// page fires the range's instants (the receiver gets each once), says how
// many, fires none the second time, reaches max runs (the schedule shows
// completed) and shows the API's problem when refused; Edit raises max runs
// and keeps the rest, and the schedule runs again.
func TestAdminPageScheduleRulesAndBackfill(t *testing.T) {
	base := startKairos(t)
	rcv := newReceiver(t)
	tok, err := auth.New([]byte(testSecret), nil).Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	apiCall(t, base, tok, "PUT", "/v1/topics/reports", map[string]any{"callback_url": rcv.URL + "/ok"})

	b := newBrowser(t, base)
	// The browser in UTC, so that the range typed into its local-time
	// inputs is the one the test computes.
	b.do("browser zone UTC", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"})
		return err
	}))
	b.load("open the page", chromedp.Navigate(base+"/"))
	b.signIn(tok)
	b.eval("open the schedules of reports", `location.hash = '#/schedules?topic=reports'`)
	b.waitText("#schedules-title", "Schedules of reports", 5*time.Second)

	// Create: hourly, skip, jitter 1s, at most 5 runs.
	b.click("schedule-add")
	b.do("the schedule dialog", chromedp.WaitVisible(chromedp.ID("schedule-form-id")))
	b.fill(map[string]string{"schedule-form-id": "hourly", "schedule-form-cron": "0 * * * *", "schedule-form-overlap": "skip",
		"schedule-form-jitter": "1s", "schedule-form-max-runs": "5"})
	b.click("schedule-form-save")
	b.waitText(`[data-testid="notice"]`, "Schedule hourly created", 5*time.Second)
	b.waitText(`[data-testid="schedule-detail-overlap"]`, "skip", 5*time.Second)
	detail := map[string]string{"overlap": "skip", "jitter": "1s", "max-runs": "5", "runs": "0", "skipped": "0", "state": "running"}
	for k, want := range detail {
		if got := b.text(`[data-testid="schedule-detail-` + k + `"]`); got != want {
			t.Errorf("the detail's %s reads %q, want %q", k, got, want)
		}
	}
	b.waitText(`[data-testid="schedule-rules-hourly"]`, "overlap skip · jitter 1s · runs 0 of 5", 5*time.Second)
	var api struct {
		Overlap string
		Jitter  string
		MaxRuns int `json:"max_runs"`
		Runs    *int
		State   string
	}
	json.Unmarshal(apiCall(t, base, tok, "GET", "/v1/topics/reports/schedules/hourly", nil), &api)
	if api.Overlap != "skip" || api.Jitter != "1s" || api.MaxRuns != 5 || api.Runs == nil || *api.Runs != 0 || api.State != "active" {
		t.Errorf("the page saved %+v, want skip, 1s, max_runs 5, runs 0, active", api)
	}

	// Backfill the three hours before this one.
	hour := time.Now().UTC().Truncate(time.Hour)
	local := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }
	backfill := func(from, to time.Time) {
		t.Helper()
		b.eval("clear the backfill answer", `document.getElementById('schedule-backfill-result').textContent = ''`)
		b.fill(map[string]string{"schedule-backfill-from": local(from), "schedule-backfill-to": local(to)})
		b.click("schedule-backfill")
	}
	backfill(hour.Add(-3*time.Hour), hour)
	b.waitText(`[data-testid="schedule-backfill-result"]`, "Backfill fired 3 instants.", 10*time.Second)
	hourly := func() map[string]int {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		out := map[string]int{}
		for id, hits := range rcv.hits {
			if strings.HasPrefix(id, "hourly@") {
				out[id] = len(hits)
			}
		}
		return out
	}
	testwait.UntilNil(t, 10*slack*time.Second, func() error {
		if got := hourly(); len(got) < 3 {
			return fmt.Errorf("the receiver got %v", got)
		}
		return nil
	}, "three hourly occurrences")
	b.waitText(`[data-testid="schedule-detail-runs"]`, "3", 5*time.Second)
	b.waitText(`[data-testid="schedule-rules-hourly"]`, "runs 3 of 5", 5*time.Second)
	b.waitText(`[data-testid="schedule-last-hourly"]`, "fired by a backfill", 5*time.Second)
	b.shot("schedule-backfill")

	// The same range again fires nothing.
	backfill(hour.Add(-3*time.Hour), hour)
	b.waitText(`[data-testid="schedule-backfill-result"]`, "fired no instant", 10*time.Second)

	// Two earlier hours: the fifth run completes the schedule.
	backfill(hour.Add(-5*time.Hour), hour.Add(-3*time.Hour))
	b.waitText(`[data-testid="schedule-backfill-result"]`, "Backfill fired 2 instants.", 10*time.Second)
	b.waitText(`[data-testid="schedule-state-hourly"]`, "completed", 5*time.Second)
	b.waitText(`[data-testid="schedule-detail-state"]`, "completed", 5*time.Second)
	b.waitText(`[data-testid="schedule-next-local-hourly"]`, "none: completed after 5 runs", 5*time.Second)
	if b.text(`[data-testid="schedule-trigger-hourly"]`) != "" {
		t.Errorf("a completed schedule offers Trigger")
	}
	b.shot("schedule-completed")

	// Refused: a completed schedule's backfill is a 409, a reversed range a 400.
	backfill(hour.Add(-9*time.Hour), hour.Add(-6*time.Hour))
	b.waitText(`[data-testid="schedule-backfill-error"]`, "409", 10*time.Second)
	backfill(hour, hour.Add(-time.Hour))
	b.waitText(`[data-testid="schedule-backfill-error"]`, "to: ", 10*time.Second)
	b.waitText(`[data-testid="schedule-backfill-error"]`, "is not after from", time.Second)
	if got := b.text(`[data-testid="schedule-backfill-result"]`); got != "" {
		t.Errorf("a refused backfill shows the answer %q", got)
	}
	testwait.UntilNil(t, 10*slack*time.Second, func() error {
		if got := hourly(); len(got) < 5 {
			return fmt.Errorf("the receiver got %v", got)
		}
		return nil
	}, "five hourly occurrences")
	for id, n := range hourly() {
		if n != 1 {
			t.Errorf("%s reached the receiver %d times, want once", id, n)
		}
	}

	// Edit: the form shows the schedule; raising max runs lets it go on,
	// and the rest is kept.
	b.click("schedule-edit")
	b.do("the schedule dialog", chromedp.WaitVisible(chromedp.ID("schedule-form-max-runs")))
	got, err := run(b, chromedp.Evaluate[map[string]string](`Object.fromEntries(['id', 'cron', 'overlap', 'jitter', 'max-runs'].map((k) => [k, document.getElementById('schedule-form-' + k).value]))`))
	if err != nil {
		b.fail("read the edit form", err)
	}
	if want := map[string]string{"id": "hourly", "cron": "0 * * * *", "overlap": "skip", "jitter": "1s", "max-runs": "5"}; !equalMaps(got, want) {
		t.Errorf("the edit form shows %v, want %v", got, want)
	}
	b.shot("schedule-edit-form")
	b.fill(map[string]string{"schedule-form-max-runs": "10", "schedule-form-overlap": "buffer_one"})
	b.click("schedule-form-save")
	b.waitText(`[data-testid="schedule-state-hourly"]`, "running", 5*time.Second)
	b.waitText(`[data-testid="schedule-detail-max-runs"]`, "10", 5*time.Second)
	b.waitText(`[data-testid="schedule-rules-hourly"]`, "overlap buffer_one · jitter 1s · runs 5 of 10", 5*time.Second)
	b.waitJS("next runs again", `document.querySelectorAll('[data-testid="schedule-next-local-hourly"] time').length === 5`, 5*time.Second)
	b.shot("schedule-edited")

	// A bad jitter is the API's field error, in the dialog.
	b.click("schedule-edit")
	b.do("the schedule dialog", chromedp.WaitVisible(chromedp.ID("schedule-form-jitter")))
	b.fill(map[string]string{"schedule-form-jitter": "soon"})
	b.click("schedule-form-save")
	b.waitText(`[data-testid="schedule-form-error"]`, "jitter", 5*time.Second)
	b.click("schedule-form-cancel")
	json.Unmarshal(apiCall(t, base, tok, "GET", "/v1/topics/reports/schedules/hourly", nil), &api)
	if api.Jitter != "1s" || api.MaxRuns != 10 || api.Overlap != "buffer_one" {
		t.Errorf("after the refused edit the API shows %+v, want jitter 1s, max_runs 10, buffer_one", api)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
