package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/internal/testwait"
)

// viewerZone is the browser's zone in the schedules test: neither UTC (the
// host's, likely) nor a schedule's.
const viewerZone = "Asia/Tokyo"

// scheduleRuns is one row's next runs as the page shows them: each
// instant (the <time> element's datetime) and its text, in the viewer's
// zone and in the schedule's.
type scheduleRuns struct {
	Local, Zone []struct{ At, Text string }
	ZoneName    string
}

// testSchedulesView drives the Schedules view as an admin: it lists a
// topic's schedules a page at a time, shows each next run in the viewer's
// zone and in the schedule's, the last run and its outcome, and pauses,
// resumes, triggers and deletes through the API.
func testSchedulesView(t *testing.T, b *browser, base, admin string, rcv *receiver) {
	api := func(method, path string, body any) []byte {
		t.Helper()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return apiCall(t, base, admin, method, path+sep+"tenant=acme", body)
	}
	getSchedule := func(id string) (sc struct {
		Paused   bool
		NextRuns []string `json:"next_runs"`
	}, status int) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/topics/reminders/schedules/"+id+"?tenant=acme", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		json.NewDecoder(res.Body).Decode(&sc)
		return sc, res.StatusCode
	}

	api("PUT", "/v1/topics/reminders", map[string]any{"callback_url": rcv.URL + "/ok"})
	for i := range 25 { // a full first page, in id order before the two below
		api("PUT", fmt.Sprintf("/v1/topics/reminders/schedules/batch-%02d", i), map[string]any{"cron": "@yearly", "payload": map[string]int{"n": i}})
	}
	api("PUT", "/v1/topics/reminders/schedules/nightly", map[string]any{"cron": "@daily", "timezone": "Europe/Berlin"})
	api("PUT", "/v1/topics/reminders/schedules/standup", map[string]any{"cron": "30 9 * * 1-5", "timezone": "America/New_York",
		"payload": map[string]string{"remind": "standup"}})
	// Every 3 s, out of step with the page's 2-second refresh: a refresh
	// in step would see each occurrence in flight and never its outcome.
	api("PUT", "/v1/topics/reminders/schedules/tick", map[string]any{"every": "3s", "payload": map[string]string{"ping": "tick"}})

	// The browser in Tokyo: what it calls local time is neither UTC nor New York.
	setZone := func(zone string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
			return err
		})
	}
	b.do("browser zone "+viewerZone, setZone(viewerZone))
	t.Cleanup(func() { b.do("browser zone back to the host's", setZone("")) })
	b.load("reload in "+viewerZone, chromedp.Reload())

	b.nav("topics")
	b.click("topic-schedules-reminders")
	b.do("the schedules view", chromedp.WaitVisible(chromedp.CSS(`[data-testid="schedules"]`)))
	b.waitText("#schedules-title", "Schedules of reminders", 5*time.Second)
	if got := b.text(`[data-testid="viewer-zone"]`); got != viewerZone {
		t.Errorf("the page names the viewer's zone %q, want %q", got, viewerZone)
	}
	rowIDs := `[...document.querySelectorAll('[data-testid="schedules-table"] tbody tr')].map((r) => r.cells[0].querySelector('a').textContent)`
	b.waitJS("a full first page", rowIDs+`.length === 25`, 10*time.Second)
	ids, _ := run(b, chromedp.Evaluate[[]string](rowIDs))
	if len(ids) != 25 || ids[0] != "batch-00" || ids[24] != "batch-24" {
		t.Errorf("first page lists %v, want batch-00 … batch-24", ids)
	}
	b.click("schedules-next")
	b.waitJS("nightly, standup and tick on page two", rowIDs+`.join() === 'nightly,standup,tick'`, 10*time.Second)

	// Every next run in both zones, read in one go with the instants shown,
	// against Go's own zone rules.
	readRuns := func(id string) scheduleRuns {
		t.Helper()
		expr := fmt.Sprintf(`(() => {
			const read = (testid) => [...document.querySelectorAll('[data-testid="' + testid + '"] time')].map((e) => ({ At: e.dateTime, Text: e.textContent }));
			return { Local: read('schedule-next-local-' + %[1]s), Zone: read('schedule-next-zone-' + %[1]s),
				ZoneName: document.querySelector('[data-testid="schedule-zone-' + %[1]s + '"]')?.textContent ?? '' };
		})()`, js(id))
		r, err := run(b, chromedp.Evaluate[scheduleRuns](expr))
		if err != nil {
			b.fail("read the next runs of "+id, err)
		}
		return r
	}
	tokyo, _ := time.LoadLocation(viewerZone)
	checkRuns := func(id, zone string) {
		t.Helper()
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		r := readRuns(id)
		if r.ZoneName != zone {
			t.Errorf("%s: zone shown %q, want %q", id, r.ZoneName, zone)
		}
		if len(r.Local) != 5 || len(r.Zone) != 5 {
			t.Fatalf("%s: %d next runs in the viewer's zone and %d in the schedule's, want 5 each: %+v", id, len(r.Local), len(r.Zone), r)
		}
		for i := range 5 {
			at, err := time.Parse(time.RFC3339Nano, r.Local[i].At)
			if err != nil || r.Zone[i].At != r.Local[i].At {
				t.Errorf("%s run %d: instants %q and %q, want one RFC 3339 instant in both columns", id, i, r.Local[i].At, r.Zone[i].At)
				continue
			}
			for _, c := range []struct {
				text string
				loc  *time.Location
			}{{r.Local[i].Text, tokyo}, {r.Zone[i].Text, loc}} {
				if want := at.In(c.loc).Format("15:04:05"); !strings.Contains(c.text, want) {
					t.Errorf("%s run %d (%s) shown as %q, want %s in %s", id, i, r.Local[i].At, c.text, want, c.loc)
				}
			}
			if r.Local[i].Text == r.Zone[i].Text {
				t.Errorf("%s run %d: both zones show %q", id, i, r.Local[i].Text)
			}
		}
	}
	checkRuns("standup", "America/New_York")
	checkRuns("tick", "UTC")
	checkRuns("nightly", "Europe/Berlin")
	standup, _ := getSchedule("standup")
	if got := readRuns("standup"); len(got.Zone) == 5 {
		var shown []string
		for _, r := range got.Zone {
			shown = append(shown, r.At)
			if !strings.Contains(r.Text, "09:30:00") {
				t.Errorf("standup runs at %q in New York, want 09:30:00", r.Text)
			}
		}
		if d := cmp.Diff(standup.NextRuns, shown); d != "" {
			t.Errorf("standup's next runs: page against API (-api +page):\n%s", d)
		}
	}

	// The last run of tick and its outcome.
	b.waitJS("tick's last run delivered", `(() => {
		const c = document.querySelector('[data-testid="schedule-last-tick"]');
		return c && c.querySelector('[data-state="delivered"]') && c.textContent.includes('HTTP 200') && /tick@\d+/.test(c.textContent);
	})()`, 10*time.Second)
	if got := b.text(`[data-testid="schedule-last-standup"]`); got != "not yet" {
		t.Errorf("standup's last run shown as %q, want not yet", got)
	}

	b.click("schedule-pause-tick")
	b.waitText(`[data-testid="schedule-state-tick"]`, "paused", 5*time.Second)
	b.waitText(`[data-testid="schedule-next-local-tick"]`, "none while paused", 5*time.Second)
	b.waitText(`[data-testid="notice"]`, "Schedule tick paused", 5*time.Second)
	if sc, _ := getSchedule("tick"); !sc.Paused || len(sc.NextRuns) != 0 {
		t.Errorf("after Pause the API shows tick paused=%v next_runs=%v, want paused with none", sc.Paused, sc.NextRuns)
	}
	b.shot("schedules-paused")
	b.click("schedule-resume-tick")
	b.waitText(`[data-testid="schedule-state-tick"]`, "running", 5*time.Second)
	b.waitJS("tick's next runs again", `document.querySelectorAll('[data-testid="schedule-next-local-tick"] time').length === 5`, 5*time.Second)
	if sc, _ := getSchedule("tick"); sc.Paused || len(sc.NextRuns) != 5 {
		t.Errorf("after Resume the API shows tick paused=%v next_runs=%v, want running with 5", sc.Paused, sc.NextRuns)
	}

	// Trigger: one occurrence now, outside the 09:30 pattern: one job more
	// in the topic, the one the notice names.
	occurrences := func() map[string]bool {
		var jobs struct{ Jobs []struct{ ID string } }
		json.Unmarshal(api("GET", "/v1/topics/reminders/jobs?limit=500", nil), &jobs)
		out := map[string]bool{}
		for _, j := range jobs.Jobs {
			if strings.HasPrefix(j.ID, "standup@") {
				out[j.ID] = true
			}
		}
		return out
	}
	before := occurrences()
	b.click("schedule-trigger-standup")
	b.waitText(`[data-testid="notice"]`, "occurrence standup@", 5*time.Second)
	m := regexp.MustCompile(`standup@\d+`).FindString(b.text(`[data-testid="notice"]`))
	var added []string
	for id := range occurrences() {
		if !before[id] {
			added = append(added, id)
		}
	}
	if m == "" || len(added) != 1 || added[0] != m {
		t.Errorf("after Trigger the notice names %q and the topic gained the jobs %v, want that one", m, added)
	}
	testwait.UntilNil(t, 10*slack*time.Second, func() error {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if hits := rcv.hits[m]; len(hits) != 1 || hits[0] != 200 {
			return fmt.Errorf("answered %v", hits)
		}
		return nil
	}, "the triggered occurrence "+m+" answered one 200")
	// The last run is the triggered occurrence, and says a trigger fired it.
	b.waitText(`[data-testid="schedule-last-standup"]`, m, 5*time.Second)
	b.waitText(`[data-testid="schedule-last-standup"]`, "fired by a manual trigger", time.Second)

	// One schedule's settings, read with GET .../schedules/{id}.
	b.click("schedule-standup")
	b.waitText(`[data-testid="schedule-detail"]`, "America/New_York", 5*time.Second)
	b.waitText(`[data-testid="schedule-detail"]`, "cron 30 9 * * 1-5", time.Second)
	b.waitText(`[data-testid="schedule-payload"]`, `"remind": "standup"`, time.Second)
	b.shot("schedules")
	b.do("390px viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	w, err := run(b, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
	if err != nil || w > 390 {
		t.Errorf("the schedules view is %vpx wide at a 390px viewport (%v): it scrolls sideways", w, err)
	}
	b.shot("schedules-phone")
	b.do("desktop viewport", chromedp.EmulateViewport(1280, 900))

	// A schedule deleted behind the page's back: its Pause answers the
	// API's 404 problem, shown in the error banner.
	b.eval("hold nightly's Pause", `window.heldPause = document.querySelector('[data-testid="schedule-pause-nightly"]')`)
	api("DELETE", "/v1/topics/reminders/schedules/nightly", nil)
	b.eval("click the held Pause", `window.heldPause.click()`)
	b.waitText(`[data-testid="error"]`, "404", 5*time.Second)
	b.waitText(`[data-testid="error"]`, "nightly", time.Second)
	b.click("error-close")
	b.waitJS("nightly gone from the list", `!document.querySelector('[data-testid="schedule-nightly"]')`, 5*time.Second)

	// Delete, confirmed like every destructive action; the API forgets it.
	for _, id := range []string{"standup", "tick"} {
		b.click("schedule-delete-" + id)
		b.do("confirm dialog", chromedp.WaitVisible(chromedp.ID("confirm-ok")))
		if msg := b.text("#confirm-title"); !strings.Contains(msg, "Delete schedule "+id) {
			t.Errorf("confirm dialog says %q", msg)
		}
		b.click("confirm-ok")
		b.waitText(`[data-testid="notice"]`, "Schedule "+id+" deleted", 5*time.Second)
		b.waitJS(id+" gone from the list", fmt.Sprintf(`!document.querySelector('[data-testid="schedule-%s"]')`, id), 5*time.Second)
		if _, status := getSchedule(id); status != http.StatusNotFound {
			t.Errorf("GET schedule %s after Delete: %d, want 404", id, status)
		}
	}
	b.waitJS("the detail card closed", `document.querySelector('[data-testid="schedule-detail"]').hidden`, 5*time.Second)
	for i := range 25 {
		api("DELETE", fmt.Sprintf("/v1/topics/reminders/schedules/batch-%02d", i), nil)
	}
}
