package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testproc"
)

// TestAdminPageShowsExpiredJobs: a job whose expiry passed while its
// topic was paused ends expired; the overview counts it in its own column,
// the jobs list filters it with state expired, and its page shows its
// expiry and priority, the log entry of the expiry, and offers a replay.
func TestAdminPageShowsExpiredJobs(t *testing.T) {
	if _, err := testproc.Binary(); err != nil {
		t.Fatal(err)
	}
	base := startKairos(t)
	rcv := newReceiver(t)
	admin, err := auth.New([]byte(testSecret), nil).Mint("ops", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	apiCall(t, base, admin, "PUT", "/v1/topics/late?tenant=acme", map[string]any{"callback_url": rcv.URL + "/ok"})
	apiCall(t, base, admin, "POST", "/v1/topics/late/pause?tenant=acme", nil)
	var j struct {
		ExpiresAt time.Time `json:"expires_at"`
		State     string    `json:"state"`
	}
	json.Unmarshal(apiCall(t, base, admin, "POST", "/v1/topics/late/jobs?tenant=acme", map[string]any{"id": "stale", "ttl": "200ms", "priority": 4}), &j)
	time.Sleep(time.Until(j.ExpiresAt.Add(100 * time.Millisecond))) // the point: the expiry passes while the topic is paused
	apiCall(t, base, admin, "POST", "/v1/topics/late/resume?tenant=acme", nil)
	waitJobState(t, base, admin, "/v1/topics/late/jobs/stale?tenant=acme", "expired", 20*time.Second)

	b := newBrowser(t, base)
	b.do("open the page", chromedp.Navigate(base+"/"))
	b.signIn(admin)
	b.nav("overview")
	b.waitText(`[data-testid="ov-expired-late"]`, "1", 15*time.Second)
	b.eval("list expired jobs", `location.hash = '#/jobs?tenant=acme&topic=late&state=expired'`)
	b.waitJS("the expired job listed", `[...document.querySelectorAll('[data-testid="jobs-table"] tbody tr')].some((r) => r.textContent.includes('stale'))`, 10*time.Second)
	b.eval("open it", `location.hash = '#/job?tenant=acme&topic=late&id=stale'`)
	b.waitJS("state expired", `document.querySelector('[data-testid="job-state"] [data-state]')?.dataset.state === 'expired'`, 10*time.Second)
	b.waitJS("expiry and priority shown", `!!document.querySelector('[data-testid="job-expires-at"]') && document.querySelector('[data-testid="job-priority"]')?.textContent.startsWith('4')`, 5*time.Second)
	b.waitJS("the expiry in the log", `document.querySelector('[data-testid="attempt-log"]').textContent.includes('expired: no attempt may start after expires_at')`, 5*time.Second)
	b.waitJS("replay offered", `!document.getElementById('job-replay').hidden`, 5*time.Second)
	b.shot("job-expired")
}
