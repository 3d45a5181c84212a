package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
)

// TestAdminPageShowsEachAttemptsAnswer: a job's attempts show, beside the
// request headers kairos sent (secrets masked), what the receiver
// answered: status, kept headers and the start of the body, for the
// failure and for the delivery.
func TestAdminPageShowsEachAttemptsAnswer(t *testing.T) {
	base := startKairos(t)
	var calls atomic.Int32
	answer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("warming up"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/invoices/7")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"invoice":7}`))
	}))
	t.Cleanup(answer.Close)
	authn := auth.New([]byte(testSecret), nil)
	tok, err := authn.Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	apiCall(t, base, tok, "PUT", "/v1/topics/invoices", map[string]any{"callback_url": answer.URL,
		"headers": map[string]string{"X-Api-Key": "k-secret-987654321"}, "backoff": map[string]string{"initial": "100ms", "max": "100ms"}})
	apiCall(t, base, tok, "POST", "/v1/topics/invoices/jobs", map[string]any{"id": "inv-1", "payload": map[string]int{"order": 7}})
	waitJobState(t, base, tok, "/v1/topics/invoices/jobs/inv-1", "delivered", 20*slack*time.Second)

	b := newBrowser(t, base)
	b.load("open the page", chromedp.Navigate(base+"/"))
	b.signIn(tok)
	b.eval("open inv-1", `location.hash = '#/job?topic=invoices&id=inv-1'`)
	b.waitJS("both attempts shown", `document.querySelector('[data-testid="response-2"]') && document.querySelector('[data-testid="response-1"]')`, 10*time.Second)
	type shown struct {
		Status, Body string
		Headers      map[string]string
	}
	read := func(n string) shown {
		v, err := run(b, chromedp.Evaluate[shown](`(() => {
			const r = document.querySelector('[data-testid="response-`+n+`"]');
			const q = (s) => r.querySelector(s);
			return { Status: q('[data-testid^="response-status"]')?.textContent || '', Body: q('pre')?.textContent || '',
				Headers: Object.fromEntries([...r.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])) };
		})()`))
		if err != nil {
			b.fail("read response "+n, err)
		}
		return v
	}
	want := map[string]shown{
		"1": {"HTTP 503", "warming up", map[string]string{"Content-Type": "text/plain", "Retry-After": "0"}},
		"2": {"HTTP 201", `{"invoice":7}`, map[string]string{"Content-Type": "application/json", "Location": "/invoices/7"}},
	}
	for n, w := range want {
		if got := read(n); got.Status != w.Status || got.Body != w.Body || len(got.Headers) != len(w.Headers) ||
			got.Headers["Content-Type"] != w.Headers["Content-Type"] {
			t.Errorf("attempt %s's response reads %+v; want %+v", n, got, w)
		}
	}
	// the request beside it, masked
	same, err := run(b, chromedp.Evaluate[bool](`document.querySelector('[data-testid="response-2"]').closest('tr') ===
		document.querySelector('[data-testid="request-headers-2"]').closest('tr')`))
	if err != nil || !same {
		t.Errorf("attempt 2's request and response are not side by side in one row (%v)", err)
	}
	if row := b.text(`[data-testid="attempt-log"]`); strings.Contains(row, "k-secret-987654321") || !strings.Contains(row, "••••••••") {
		t.Errorf("the attempt log shows a secret, or masks nothing: %q", row)
	}
	b.shot("attempt-answers")
}
