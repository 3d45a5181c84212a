package web

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestAdminPageNewcomerFixes drives what a newcomer found wrong with the
// admin page (issue 33, item 12), one subtest each: attempts after a
// replay, the header's wording, the topics table's flow column and URLs,
// durations, the topic the Jobs and Schedules views open on, creating a
// schedule, zone names as the CLI writes them, a job held by its topic's
// rate limit, and an attempt's request headers.
func TestAdminPageNewcomerFixes(t *testing.T) {
	base := startKairos(t)
	rcv := newReceiver(t)
	authn := auth.New([]byte(testSecret), nil)
	admin, err := authn.Mint("admin", true, time.Hour) // as dev mode's banner token
	if err != nil {
		t.Fatal(err)
	}
	apiT := func(t *testing.T, method, path string, body any) []byte {
		t.Helper()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return apiCall(t, base, admin, method, path+sep+"tenant=acme", body)
	}
	api := func(method, path string, body any) []byte {
		t.Helper()
		return apiT(t, method, path, body)
	}
	type job struct {
		State         string
		Attempts      int
		ReplayedAfter int    `json:"replayed_after"`
		RunAt         string `json:"run_at"`
		NextRunAt     string `json:"next_run_at"`
	}
	waitJob := func(t *testing.T, topic, id string, ok func(job) bool) job {
		t.Helper()
		var j job
		testwait.UntilNil(t, 20*slack*time.Second, func() error {
			j = job{}
			json.Unmarshal(apiT(t, "GET", "/v1/topics/"+topic+"/jobs/"+id, nil), &j)
			if !ok(j) {
				return fmt.Errorf("it is %+v", j)
			}
			return nil
		}, "job "+topic+"/"+id)
		return j
	}

	// alpha: first by name, and empty.
	api("PUT", "/v1/topics/alpha", map[string]any{"callback_url": rcv.URL + "/ok"})
	longURL := rcv.URL + "/ok/hooks/kairos/orders-service/callbacks/a-rather-long-path-segment?token-free-query=abcdefghijklmnopqrstuvwxyz0123456789"
	api("PUT", "/v1/topics/orders", map[string]any{"callback_url": longURL,
		"headers": map[string]string{"X-Team": "billing", "X-Api-Key": "k-123456789"},
		"breaker": map[string]any{"failures": 5, "cooldown": "1m"}})
	api("PUT", "/v1/topics/down", map[string]any{"callback_url": rcv.URL + "/down", "max_attempts": 2,
		"backoff": map[string]string{"initial": "100ms", "max": "200ms"}})
	api("PUT", "/v1/topics/slow", map[string]any{"callback_url": rcv.URL + "/ok", "rate": map[string]any{"limit": 1, "period": "1h"}})
	api("PUT", "/v1/topics/reminders", map[string]any{"callback_url": rcv.URL + "/ok"})
	api("PUT", "/v1/topics/reminders/schedules/berlin", map[string]any{"cron": "0 9 * * *", "timezone": "Europe/Berlin"})

	api("POST", "/v1/topics/orders/jobs", map[string]any{"id": "order-1", "delay": "0s",
		"headers": map[string]string{"Authorization": "Bearer sk_live_abcdef123456", "X-Trace": "trace-42"},
		"payload": map[string]int{"order": 1}})
	// A job that dies after its 2 attempts, is replayed and dies again: 4
	// attempts, 2 of them since the replay.
	api("POST", "/v1/topics/down/jobs", map[string]any{"id": "down-1", "delay": "0s"})
	waitJob(t, "down", "down-1", func(j job) bool { return j.State == "dead" })
	api("POST", "/v1/topics/down/jobs/down-1/retry", nil)
	waitJob(t, "down", "down-1", func(j job) bool { return j.State == "dead" && j.Attempts == 4 })
	// Three jobs due now in a topic allowed 1 an hour: the third waits for
	// its turn, two hours after its run_at.
	for i := range 3 {
		api("POST", "/v1/topics/slow/jobs", map[string]any{"id": fmt.Sprintf("slow-%d", i), "delay": "0s"})
	}
	waitJob(t, "orders", "order-1", func(j job) bool { return j.State == "delivered" })

	b := newBrowser(t, base)
	shots := t.TempDir()
	shot := func(b *browser, name string) {
		b.t.Helper()
		png, err := run(b, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() < 1000 {
			b.t.Errorf("screenshot %s: %v, %d bytes", p, err, fi.Size())
		}
		b.t.Logf("screenshot: %s", p)
	}
	b.do("open the page", chromedp.Navigate(base+"/"))
	b.signIn(admin)

	t.Run("the header names an admin once", func(t *testing.T) {
		b := b.on(t)
		b.waitText("#identity", "every tenant", 5*time.Second)
		if got := b.text("#identity"); got != "admin: every tenant" {
			t.Errorf("the header says %q, want %q", got, "admin: every tenant")
		}
	})

	t.Run("topics table: a header for every column, URLs on one line", func(t *testing.T) {
		b := b.on(t)
		b.nav("topics")
		b.do("orders listed", chromedp.WaitVisible(chromedp.CSS(`[data-testid="topic-orders"]`)))
		type columns struct {
			Heads []string
			Cells int
		}
		cols, err := run(b, chromedp.Evaluate[columns](`(() => {
			const t = document.querySelector('[data-testid="topics-table"]');
			const row = t.querySelector('[data-testid="topic-orders"]').closest('tr');
			return { Heads: [...t.tHead.rows[0].cells].map((c) => c.textContent), Cells: row.cells.length };
		})()`))
		if err != nil {
			b.fail("read the topics table", err)
		}
		if len(cols.Heads) != cols.Cells {
			t.Errorf("the topics table has %d headers %q for %d cells a row", len(cols.Heads), cols.Heads, cols.Cells)
		}
		if !strings.Contains(strings.Join(cols.Heads, "|"), "Flow control") {
			t.Errorf("headers %q: no Flow control", cols.Heads)
		}
		type shownURL struct {
			Title, Text string
			Lines       int
			Cut         bool
		}
		u, err := run(b, chromedp.Evaluate[shownURL](`(() => {
			const e = document.querySelector('[data-testid="topic-url-orders"]');
			const line = parseFloat(getComputedStyle(e).lineHeight) || 20;
			return { Title: e.title, Text: e.textContent, Lines: Math.round(e.getBoundingClientRect().height / line), Cut: e.scrollWidth > e.clientWidth };
		})()`))
		if err != nil {
			b.fail("read the callback URL", err)
		}
		// the API masks the query's values; the page shows what it answers
		shown, _, _ := strings.Cut(longURL, "=")
		shown += "=••••••••"
		if u.Title != shown || u.Text != shown {
			t.Errorf("the callback URL reads %q with title %q, want %q in both", u.Text, u.Title, shown)
		}
		if u.Lines != 1 || !u.Cut {
			t.Errorf("the callback URL takes %d lines (cut with an ellipsis: %v); want one line, cut", u.Lines, u.Cut)
		}
		shot(b, "topics")
	})

	t.Run("durations read as people write them", func(t *testing.T) {
		b := b.on(t)
		b.nav("topics")
		b.waitText(`[data-testid="topic-flow-orders"]`, "breaker closed (opens after 5 failures, 1m)", 5*time.Second)
		b.waitText(`[data-testid="topic-flow-slow"]`, "1 per 1h", 5*time.Second)
		txt := b.text(`[data-testid="topics-table"]`)
		if !strings.Contains(txt, "backoff 1s–1h") || !strings.Contains(txt, "backoff 100ms–200ms") {
			t.Errorf("topics table %q: want backoff 1s–1h and 100ms–200ms", txt)
		}
		if strings.Contains(txt, "0m0s") || strings.Contains(txt, "m0s") {
			t.Errorf("topics table shows Go's 0m0s: %q", txt)
		}
		b.click("topic-edit-orders")
		b.do("edit dialog", chromedp.WaitVisible(chromedp.ID("topic-timeout")))
		b.waitJS("the dialog filled", `document.getElementById('topic-backoff-max').value !== ''`, 5*time.Second)
		got, _ := run(b, chromedp.Evaluate[[]string](`['topic-backoff-max', 'topic-breaker-cooldown', 'topic-timeout'].map((id) => document.getElementById(id).value)`))
		if strings.Join(got, " ") != "1h 1m 30s" {
			t.Errorf("the edit dialog's backoff max, cooldown and timeout read %q, want 1h 1m 30s", got)
		}
		b.click("topic-cancel")
	})

	t.Run("jobs and schedules open on a topic with data", func(t *testing.T) {
		b := b.on(t)
		b.eval("go to #/jobs", `location.hash = '#/jobs'`)
		b.waitJS("jobs listed", `document.querySelectorAll('[data-testid="jobs-table"] tbody tr').length > 0`, 10*time.Second)
		if v, _ := run(b, chromedp.Value(chromedp.ID("jobs-topic"))); v != "acme/down" {
			t.Errorf("the jobs view opened on %q, want acme/down (alpha, first by name, has no jobs)", v)
		}
		b.eval("go to #/schedules", `location.hash = '#/schedules'`)
		b.waitJS("schedules listed", `document.querySelector('[data-testid="schedule-berlin"]')`, 10*time.Second)
		if v, _ := run(b, chromedp.Value(chromedp.ID("schedules-topic"))); v != "acme/reminders" {
			t.Errorf("the schedules view opened on %q, want acme/reminders, the one topic with schedules", v)
		}
	})

	t.Run("create a schedule", func(t *testing.T) {
		b := b.on(t)
		b.eval("go to reminders' schedules", `location.hash = '#/schedules?tenant=acme&topic=reminders'`)
		b.waitJS("berlin listed", `document.querySelector('[data-testid="schedule-berlin"]')`, 10*time.Second)
		b.click("schedule-add")
		b.do("the schedule dialog", chromedp.WaitVisible(chromedp.ID("schedule-form-id")))
		b.fill(map[string]string{"schedule-form-id": "weekday-report", "schedule-form-cron": "61 9 * * 1-5",
			"schedule-form-timezone": "Europe/Berlin", "schedule-form-payload": `{"report": "daily"}`})
		b.click("schedule-form-save")
		b.waitText(`[data-testid="schedule-form-error"]`, "cron:", 10*time.Second) // the API's field error
		b.fill(map[string]string{"schedule-form-cron": "0 9 * * 1-5", "schedule-form-timezone": "Mars/Olympus"})
		b.click("schedule-form-save")
		b.waitText(`[data-testid="schedule-form-error"]`, "timezone:", 10*time.Second)
		shot(b, "schedule-form-error")
		b.fill(map[string]string{"schedule-form-timezone": "Europe/Berlin", "schedule-form-url": rcv.URL + "/ok/reports"})
		b.click("schedule-form-save")
		b.do("the dialog closed", chromedp.WaitNotVisible(chromedp.ID("schedule-dialog")))
		b.waitText(`[data-testid="notice"]`, "Schedule weekday-report created", 5*time.Second)
		b.waitText(`[data-testid="schedule-detail"]`, "cron 0 9 * * 1-5", 10*time.Second)
		var sc struct {
			Cron, Timezone string
			CallbackURL    string `json:"callback_url"`
			Payload        map[string]string
		}
		json.Unmarshal(api("GET", "/v1/topics/reminders/schedules/weekday-report", nil), &sc)
		if sc.Cron != "0 9 * * 1-5" || sc.Timezone != "Europe/Berlin" || sc.CallbackURL != rcv.URL+"/ok/reports" || sc.Payload["report"] != "daily" {
			t.Errorf("the API has the schedule as %+v", sc)
		}
	})

	t.Run("zones named as the CLI names them", func(t *testing.T) {
		b := b.on(t)
		b.eval("go to reminders' schedules", `location.hash = '#/schedules?tenant=acme&topic=reminders'`)
		b.waitJS("berlin's runs", `document.querySelectorAll('[data-testid="schedule-next-zone-berlin"] time').length === 5`, 10*time.Second)
		runs, err := run(b, chromedp.Evaluate[[]struct{ At, Text string }](
			`[...document.querySelectorAll('[data-testid="schedule-next-zone-berlin"] time')].map((e) => ({ At: e.dateTime, Text: e.textContent }))`))
		if err != nil {
			b.fail("read berlin's runs", err)
		}
		berlin, _ := time.LoadLocation("Europe/Berlin")
		for _, r := range runs {
			at, err := time.Parse(time.RFC3339Nano, r.At)
			if err != nil {
				t.Fatal(err)
			}
			// cmd/kairos's showSchedule: t.In(zone).Format("... MST")
			want := at.In(berlin).Format("15:04:05 MST")
			if !strings.HasSuffix(r.Text, want) || strings.Contains(r.Text, "GMT") {
				t.Errorf("the run at %s reads %q in Berlin; want it to end %q, as the CLI writes it", r.At, r.Text, want)
			}
		}
	})

	t.Run("a job held by its topic's rate limit says so", func(t *testing.T) {
		b := b.on(t)
		j := waitJob(t, "slow", "slow-2", func(j job) bool { return j.NextRunAt > j.RunAt })
		b.eval("open slow-2", `location.hash = '#/job?tenant=acme&topic=slow&id=slow-2'`)
		b.waitText(`[data-testid="job-held"]`, "Held by its topic's rate limit (1 per 1h)", 10*time.Second)
		if held, _ := run(b, chromedp.Evaluate[string](`document.querySelector('[data-testid="job-held"] [data-held]').dataset.held`)); held != "rate" {
			t.Errorf("job slow-2 (%+v) held by %q, want rate", j, held)
		}
		if txt := b.text(`[data-testid="job-held"]`); !strings.Contains(txt, "2h after its run_at") {
			t.Errorf("job slow-2 (%+v): %q; want its turn 2h after its run_at", j, txt)
		}
		shot(b, "job-held")
		b.eval("open order-1", `location.hash = '#/job?tenant=acme&topic=orders&id=order-1'`)
		b.waitText(`[data-testid="job-id"]`, "order-1", 5*time.Second)
		b.waitText(`[data-testid="job-state"]`, "delivered", 5*time.Second)
		if txt := b.text(`[data-testid="job"]`); strings.Contains(txt, "Held") {
			t.Errorf("order-1, delivered at once, reads as held: %q", txt)
		}
	})

	t.Run("an attempt's request headers, secrets masked", func(t *testing.T) {
		b := b.on(t)
		b.eval("open order-1", `location.hash = '#/job?tenant=acme&topic=orders&id=order-1'`)
		b.waitJS("attempt 1 logged", `document.querySelector('[data-testid="request-headers-1"]')`, 10*time.Second)
		b.do("open attempt 1's request headers", chromedp.Click(chromedp.CSS(`[data-testid="request-headers-1"] summary`)))
		b.waitJS("the headers shown", `document.querySelector('[data-testid="request-headers-1"]').open`, 5*time.Second)
		hs, err := run(b, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('[data-testid="request-headers-1"] dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))`))
		if err != nil {
			b.fail("read the request headers", err)
		}
		want := map[string]string{"X-Team": "billing", "X-Api-Key": "••••••••", "Authorization": "••••••••", "X-Trace": "trace-42",
			"Content-Type": "application/json", "Kairos-Job-Id": "order-1", "Kairos-Topic": "orders", "Kairos-Attempt": "1",
			"webhook-signature": "••••••••", "Kairos-Signature": "••••••••"}
		for k, v := range want {
			if hs[k] != v {
				t.Errorf("request header %s reads %q, want %q (all: %v)", k, hs[k], v, hs)
			}
		}
		row := b.text(`[data-testid="attempt-log"] tbody tr`)
		if strings.Contains(row, "sk_live") || strings.Contains(row, "k-123456789") {
			t.Errorf("a secret shown in the attempt row: %q", row)
		}
		if !strings.Contains(row, `{"status":200}`) {
			t.Errorf("the attempt row %q lacks the response beside the headers", row)
		}
		shot(b, "request-headers")
	})

	t.Run("attempts after a replay", func(t *testing.T) {
		b := b.on(t)
		b.eval("open down-1", `location.hash = '#/job?tenant=acme&topic=down&id=down-1'`)
		b.waitText(`[data-testid="job-id"]`, "down-1", 5*time.Second)
		b.waitText(`[data-testid="job-attempts"]`, "of 2", 10*time.Second)
		if got := b.text(`[data-testid="job-attempts"]`); got != "2 of 2 since the replay (4 in all)" {
			t.Errorf("a job replayed once, with 2 attempts each time, reads %q", got)
		}
		b.eval("list down's jobs", `location.hash = '#/jobs?tenant=acme&topic=down'`)
		b.waitText(`[data-testid="jobs-table"]`, "down-1", 10*time.Second)
		if got := b.text(`[data-testid="jobs-table"] tbody td[data-label="Attempts"]`); got != "2 of 2 since the replay (4 in all)" {
			t.Errorf("the jobs list shows down-1's attempts as %q", got)
		}
		shot(b, "job-replayed")
	})

	for _, line := range strings.Split(b.logs.String(), "\n") {
		if strings.HasPrefix(line, "exception") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("browser console: %s", line)
		}
	}
}
