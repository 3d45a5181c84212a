package web

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestAdminPageDeadLettersLeaveNotificationsOut: a job that dies has its
// failure notification filed, which dies too when the failure URL is down.
// The dead letters view lists the job alone by default; a toggle shows the
// notification beside it, marked as one, and the choice is in the view's
// address.
func TestAdminPageDeadLettersLeaveNotificationsOut(t *testing.T) {
	base := startKairos(t)
	rcv := newReceiver(t)
	acme, err := auth.New([]byte(testSecret), nil).Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	apiCall(t, base, acme, "PUT", "/v1/topics/alerts", map[string]any{"callback_url": rcv.URL + "/down", "max_attempts": 1,
		"failure_url": rcv.URL + "/down"})
	apiCall(t, base, acme, "POST", "/v1/topics/alerts/jobs", map[string]any{"id": "a1", "delay": "0s"})
	notice := kairos.NoticeID("a1", 1)
	testwait.UntilNil(t, 20*slack*time.Second, func() error {
		var page struct{ Jobs []struct{ ID, Kind string } }
		json.Unmarshal(apiCall(t, base, acme, "GET", "/v1/dead", nil), &page)
		if len(page.Jobs) != 2 {
			return fmt.Errorf("dead letters %+v", page.Jobs)
		}
		return nil
	}, "dead letters a1 and "+notice)

	b := newBrowser(t, base)
	b.do("open the page", chromedp.Navigate(base+"/"))
	b.signIn(acme)
	b.nav("dead")
	rows := `[...document.querySelectorAll('[data-testid="dead-table"] tbody tr')]`
	b.waitJS("a1 listed alone", rows+`.length === 1 && `+rows+`[0].textContent.includes('a1')`, 10*time.Second)
	b.shot("dead-letters-without-notifications")

	b.click("dead-notifications")
	b.waitJS("the notification listed too, marked", rows+`.length === 2 && !!document.querySelector('[data-testid="dead-kind-`+notice+`"]')`, 10*time.Second)
	if got := b.text(`[data-testid="dead-kind-` + notice + `"]`); got != "notification" {
		t.Errorf("the notification's mark reads %q", got)
	}
	if hash, _ := run(b, chromedp.Evaluate[string](`location.hash`)); hash != "#/dead?notifications=1" {
		t.Errorf("with notifications shown the address is %q, want #/dead?notifications=1", hash)
	}
	b.shot("dead-letters-with-notifications")

	b.click("dead-notifications")
	b.waitJS("the job alone again", rows+`.length === 1`, 10*time.Second)
}
