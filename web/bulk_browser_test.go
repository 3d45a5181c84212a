package web

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testBulkView drives the Jobs view's label filter and bulk cancel as an
// admin: the filter lists exactly the labelled jobs, page by page, and
// "Cancel all matching" cancels every one of them (not only the page
// shown), with a progress bar that ends full.
func testBulkView(t *testing.T, b *browser, base, admin string, rcv *receiver) {
	api := func(method, path string, body any) []byte {
		t.Helper()
		return apiCall(t, base, admin, method, path+"?tenant=acme", body)
	}
	api("PUT", "/v1/topics/bulky", map[string]any{"callback_url": rcv.URL + "/ok"})
	var batch []map[string]any
	for i := range 60 {
		wave := "1"
		if i%3 == 2 {
			wave = "2"
		}
		batch = append(batch, map[string]any{"id": fmt.Sprintf("b-%02d", i), "delay": "1h", "labels": map[string]string{"wave": wave}})
	}
	api("POST", "/v1/topics/bulky/jobs/batch", map[string]any{"jobs": batch})

	rowsIs := func(what string, n int) {
		b.waitJS(what, fmt.Sprintf(`document.querySelectorAll('[data-testid="jobs-table"] tbody tr').length === %d`, n), 10*time.Second)
	}
	b.nav("jobs")
	b.fill(map[string]string{"jobs-topic": "acme / bulky", "jobs-state": ""})
	b.waitJS("no bulk action without a filter", `document.getElementById('jobs-bulk-cancel').disabled`, 10*time.Second)
	b.fill(map[string]string{"jobs-label": "wave:1"})
	rowsIs("a full first page of wave 1", 25)
	b.click("jobs-next")
	rowsIs("the other 15 of wave 1", 15)
	b.click("jobs-first")
	rowsIs("the first page again", 25)

	b.waitJS("bulk cancel enabled by the label filter", `!document.getElementById('jobs-bulk-cancel').disabled`, 10*time.Second)
	b.click("jobs-bulk-cancel")
	b.do("confirm dialog", chromedp.WaitVisible(chromedp.ID("confirm-ok")))
	b.click("confirm-ok")
	b.waitText(`[data-testid="jobs-bulk-text"]`, "done: 40 cancelled of 40", 20*time.Second)
	b.waitJS("a full progress bar", `(() => { const p = document.getElementById('jobs-bulk-bar'); return p.value === p.max; })()`, 5*time.Second)
	// cancelled jobs stay listed, as cancelled, for the retention period
	b.waitJS("wave 1 listed as cancelled", `(() => { const rs = [...document.querySelectorAll('[data-testid="jobs-table"] tbody tr')];
		return rs.length === 25 && rs.every((r) => r.querySelector('[data-state="cancelled"]')); })()`, 10*time.Second)
	b.fill(map[string]string{"jobs-state": "scheduled"})
	rowsIs("no wave 1 job left scheduled", 0)
	b.shot("bulk-cancel")

	var left struct{ Jobs []struct{ ID string } }
	json.Unmarshal(apiCall(t, base, admin, "GET", "/v1/topics/bulky/jobs?tenant=acme&label=wave:1&state=scheduled", nil), &left)
	if len(left.Jobs) != 0 {
		t.Errorf("wave 1 jobs left scheduled after the bulk cancel: %v", left.Jobs)
	}
	b.fill(map[string]string{"jobs-label": "wave:2"})
	rowsIs("wave 2 untouched", 20)
	b.fill(map[string]string{"jobs-label": "", "jobs-state": ""})
}
