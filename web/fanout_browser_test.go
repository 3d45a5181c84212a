package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testproc"
)

// TestAdminPageFanOut drives a topic's subscriptions and a message's
// deliveries as tenant acme: a subscription added with the form is listed
// with its URL masked, edited, paused, resumed and deleted (its pending
// deliveries cancelled, as the confirmation says); a filter the API
// refuses shows its path beside the filter field. A message published
// through the API opens on the page with each delivery's state: one
// subscription's receiver answers 200, another's 500 until it is dead.
// Another tenant's topic and message are a clean 404 on the page.
func TestAdminPageFanOut(t *testing.T) {
	if _, err := testproc.Binary(); err != nil {
		t.Fatal(err)
	}
	base := startKairos(t)
	rcv := newReceiver(t)
	authn := auth.New([]byte(testSecret), nil)
	admin, err := authn.Mint("ops", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	acme, err := authn.Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// status calls the API and answers the status and the decoded body.
	status := func(token, method, path string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if out != nil {
			json.NewDecoder(res.Body).Decode(out)
		}
		return res.StatusCode
	}

	// Another tenant's topic, subscription and message: acme must see none.
	apiCall(t, base, admin, "PUT", "/v1/topics/ledger?tenant=globex", map[string]any{"callback_url": rcv.URL + "/ok"})
	apiCall(t, base, admin, "PUT", "/v1/topics/ledger/subscriptions/audit?tenant=globex", map[string]any{"url": rcv.URL + "/ok?key=globex-zzz"})
	apiCall(t, base, admin, "POST", "/v1/topics/ledger/messages?tenant=globex", map[string]any{"id": "g-1", "payload": map[string]int{"n": 1}})
	apiCall(t, base, acme, "PUT", "/v1/topics/orders", map[string]any{"callback_url": rcv.URL + "/ok"})

	b := newBrowser(t, base)
	b.do("open the page", chromedp.Navigate(base+"/"))
	b.signIn(acme)
	b.waitText("#identity", "tenant acme", 5*time.Second)
	rowCount := `document.querySelectorAll('[data-testid="subs-table"] tbody tr').length`

	t.Run("add, list, edit, pause, resume, delete", func(t *testing.T) {
		b := b.on(t)
		b.nav("topics")
		b.click("topic-subscriptions-orders")
		b.do("the subscriptions view", chromedp.WaitVisible(chromedp.CSS(`[data-testid="subscriptions"]`)))
		b.waitText("#subs-title", "Subscriptions of orders", 5*time.Second)
		b.waitJS("no subscriptions yet", `!document.getElementById('subs-empty').hidden`, 5*time.Second)

		b.click("sub-add")
		b.do("subscription dialog", chromedp.WaitVisible(chromedp.ID("sub-name")))
		b.fill(map[string]string{"sub-name": "billing", "sub-url": rcv.URL + "/ok?token=secret-zzz",
			"sub-event-types": "order.created, order.paid", "sub-filter": `{"data.total": {"$gte": 100}}`,
			"sub-headers": "X-Api-Key: k-abc123456\nX-Team: billing", "sub-method": "PUT", "sub-timeout": "5s", "sub-attempts": "3",
			"sub-backoff-initial": "100ms", "sub-backoff-max": "1s", "sub-rate-limit": "10", "sub-rate-period": "1s",
			"sub-parallelism": "4", "sub-breaker": "5", "sub-breaker-cooldown": "30s", "sub-signing": "subscription",
			"sub-description": "billing's order hook"})
		b.shot("subscription-form")
		b.click("sub-save")
		b.do("billing listed", chromedp.WaitVisible(chromedp.CSS(`[data-testid="sub-billing"]`)))
		b.waitText(`[data-testid="notice"]`, "Subscription billing added", 5*time.Second)

		// The list shows the URL as the API masks it, and never the secret.
		if u := b.text(`[data-testid="sub-url-billing"]`); !strings.Contains(u, "/ok?token=••••••••") {
			t.Errorf("billing's URL shown as %q, want its query value masked", u)
		}
		page, _ := run(b, chromedp.Evaluate[string](`document.querySelector('main').innerHTML`))
		for _, secret := range []string{"secret-zzz", "k-abc123456"} {
			if strings.Contains(page, secret) {
				t.Errorf("the subscriptions list shows the secret %q", secret)
			}
		}
		recv := b.text(`[data-testid="sub-receives-billing"]`)
		if !strings.Contains(recv, "event types: order.created, order.paid") || !strings.Contains(recv, `{"data.total":{"$gte":100}}`) {
			t.Errorf("billing receives %q, want its event types and filter", recv)
		}
		if s := b.text(`[data-testid="sub-settings-billing"]`); !strings.Contains(s, "timeout 5s · 3 attempts") || !strings.Contains(s, "10 per 1s · 4 in flight") ||
			!strings.Contains(s, "headers: X-Api-Key, X-Team") {
			t.Errorf("billing's settings shown as %q", s)
		}
		for _, c := range []string{"pending", "delivered", "dead"} {
			if n := b.text(fmt.Sprintf(`[data-testid="sub-%s-billing"]`, c)); n != "0" {
				t.Errorf("billing's %s count is %q, want 0", c, n)
			}
		}
		if br := b.text(`[data-testid="sub-breaker-billing"]`); !strings.Contains(br, "closed") || !strings.Contains(br, "opens after 5 failures, 30s") {
			t.Errorf("billing's breaker shown as %q", br)
		}
		var sub struct {
			URL         string
			Method      string
			Headers     map[string]string
			EventTypes  []string `json:"event_types"`
			Filter      map[string]any
			MaxAttempts int `json:"max_attempts"`
			Rate        struct{ Limit int }
			Parallelism int
			Breaker     struct{ Failures int }
			Signing     string
			Paused      bool
			Description string
		}
		json.Unmarshal(apiCall(t, base, acme, "GET", "/v1/topics/orders/subscriptions/billing?reveal=headers", nil), &sub)
		if sub.URL != rcv.URL+"/ok?token=secret-zzz" || sub.Method != "PUT" || sub.Headers["X-Api-Key"] != "k-abc123456" || len(sub.EventTypes) != 2 ||
			sub.Filter["data.total"] == nil || sub.MaxAttempts != 3 || sub.Rate.Limit != 10 || sub.Parallelism != 4 || sub.Breaker.Failures != 5 ||
			sub.Signing != "subscription" || sub.Description != "billing's order hook" {
			t.Errorf("the API holds billing as %+v, not as the form said", sub)
		}

		// Edit: the dialog holds the revealed URL and headers, so saving
		// keeps the secrets.
		b.click("sub-edit-billing")
		b.do("edit dialog", chromedp.WaitVisible(chromedp.ID("sub-url")))
		b.waitJS("the revealed URL in the dialog", `document.getElementById('sub-url').value.endsWith('/ok?token=secret-zzz')`, 5*time.Second)
		if v, _ := run(b, chromedp.Value(chromedp.ID("sub-headers"))); !strings.Contains(v, "X-Api-Key: k-abc123456") {
			t.Errorf("edit dialog headers %q, want the revealed ones", v)
		}
		if v, _ := run(b, chromedp.Value(chromedp.ID("sub-filter"))); !strings.Contains(v, `"$gte": 100`) {
			t.Errorf("edit dialog filter %q, want billing's", v)
		}
		b.fill(map[string]string{"sub-event-types": "order.created", "sub-description": "billing, created orders only"})
		b.click("sub-save")
		b.waitText(`[data-testid="sub-receives-billing"]`, "event types: order.created", 5*time.Second)
		b.waitText(`[data-testid="notice"]`, "Subscription billing saved", 5*time.Second)
		sub.Headers = nil
		json.Unmarshal(apiCall(t, base, acme, "GET", "/v1/topics/orders/subscriptions/billing?reveal=headers", nil), &sub)
		if len(sub.EventTypes) != 1 || sub.URL != rcv.URL+"/ok?token=secret-zzz" || sub.Headers["X-Api-Key"] != "k-abc123456" || sub.Rate.Limit != 10 {
			t.Errorf("after the edit the API holds billing as %+v", sub)
		}

		b.click("sub-pause-billing")
		b.waitText(`[data-testid="sub-state-billing"]`, "paused", 5*time.Second)
		json.Unmarshal(apiCall(t, base, acme, "GET", "/v1/topics/orders/subscriptions/billing", nil), &sub)
		if !sub.Paused {
			t.Error("after Pause the API says billing is not paused")
		}
		b.shot("subscription-paused")
		b.click("sub-resume-billing")
		b.waitText(`[data-testid="sub-state-billing"]`, "delivering", 5*time.Second)
		json.Unmarshal(apiCall(t, base, acme, "GET", "/v1/topics/orders/subscriptions/billing", nil), &sub)
		if sub.Paused {
			t.Error("after Resume the API says billing is paused")
		}

		b.click("sub-delete-billing")
		b.do("confirm dialog", chromedp.WaitVisible(chromedp.ID("confirm-ok")))
		if msg := b.text("#confirm-message"); !strings.Contains(msg, "pending deliveries (0 now) are cancelled") {
			t.Errorf("the delete confirmation says %q; it must say that pending deliveries are cancelled", msg)
		}
		b.click("confirm-ok")
		b.waitText(`[data-testid="notice"]`, "Subscription billing deleted; its pending deliveries are cancelled", 5*time.Second)
		b.waitJS("billing gone from the list", `!document.querySelector('[data-testid="sub-billing"]')`, 5*time.Second)
		if st := status(acme, "GET", "/v1/topics/orders/subscriptions/billing", nil); st != http.StatusNotFound {
			t.Errorf("GET billing after Delete: %d, want 404", st)
		}
	})

	t.Run("a filter that does not parse names its path beside the field", func(t *testing.T) {
		b := b.on(t)
		b.click("sub-add")
		b.do("subscription dialog", chromedp.WaitVisible(chromedp.ID("sub-name")))
		// A new subscription after an edit starts blank.
		if v, _ := run(b, chromedp.Value(chromedp.ID("sub-url"))); v != "" {
			t.Errorf("the add dialog starts with URL %q, want blank", v)
		}
		b.fill(map[string]string{"sub-name": "big", "sub-url": rcv.URL + "/ok", "sub-filter": `{"data.total": {"$gt": true}}`, "sub-attempts": "500"})
		b.click("sub-save")
		b.waitText(`[data-testid="sub-filter-error"]`, "filter", 10*time.Second)
		fe := b.text(`[data-testid="sub-filter-error"]`)
		if !strings.Contains(fe, "data.total") || !strings.Contains(fe, "$gt") {
			t.Errorf("the filter's error says %q, want the path data.total and its $gt", fe)
		}
		b.waitText(`[data-testid="sub-attempts-error"]`, "max_attempts", time.Second)
		b.waitText(`[data-testid="sub-error"]`, "400 Invalid request: 2 fields to mend", time.Second)
		invalid, _ := run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#sub-form [aria-invalid="true"]')].map((e) => e.id)`))
		if strings.Join(invalid, ",") != "sub-filter,sub-attempts" {
			t.Errorf("fields marked invalid: %v, want sub-filter and sub-attempts", invalid)
		}
		b.shot("subscription-filter-error")

		// Not JSON at all: said beside the field before asking the API.
		b.fill(map[string]string{"sub-filter": `{"data.total": `, "sub-attempts": ""})
		b.click("sub-save")
		b.waitText(`[data-testid="sub-filter-error"]`, "filter: not valid JSON", 5*time.Second)
		b.waitJS("the attempts error cleared", `document.querySelector('[data-testid="sub-attempts-error"]').hidden`, time.Second)
		b.click("sub-cancel")
		if st := status(acme, "GET", "/v1/topics/orders/subscriptions/big", nil); st != http.StatusNotFound {
			t.Errorf("GET big after refused saves: %d, want 404", st)
		}
	})

	t.Run("a message's deliveries and their states", func(t *testing.T) {
		b := b.on(t)
		apiCall(t, base, acme, "PUT", "/v1/topics/orders/subscriptions/shipping", map[string]any{"url": rcv.URL + "/ok",
			"event_types": []string{"order.created"}, "description": "the warehouse"})
		apiCall(t, base, acme, "PUT", "/v1/topics/orders/subscriptions/alerts", map[string]any{"url": rcv.URL + "/flaky",
			"max_attempts": 2, "backoff": map[string]string{"initial": "100ms", "max": "200ms"}, "timeout": "2s",
			"breaker": map[string]any{"failures": 2, "cooldown": "1m"}})
		apiCall(t, base, acme, "PUT", "/v1/topics/orders/subscriptions/refunds", map[string]any{"url": rcv.URL + "/ok",
			"event_types": []string{"order.refunded"}})
		var pub struct {
			Deliveries []struct {
				Subscription string
				JobID        string `json:"job_id"`
			}
		}
		json.Unmarshal(apiCall(t, base, acme, "POST", "/v1/topics/orders/messages", map[string]any{"id": "order-7-created",
			"event_type": "order.created", "payload": map[string]any{"data": map[string]any{"order_id": 7, "total": 120}}}), &pub)
		if len(pub.Deliveries) != 2 {
			t.Fatalf("the publish made deliveries %+v, want alerts and shipping", pub.Deliveries)
		}

		b.waitJS("three subscriptions listed", rowCount+` === 3`, 10*time.Second)
		b.fill(map[string]string{"subs-message-id": "order-7-created"})
		b.click("subs-message-open")
		b.do("the message view", chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"]`)))
		b.waitText(`[data-testid="message-id"]`, "order-7-created", 5*time.Second)
		b.waitJS("shipping delivered", `document.querySelector('[data-testid="delivery-state-shipping"] [data-state="delivered"]')`, 20*time.Second)
		b.waitJS("alerts retrying or dead", `document.querySelector('[data-testid="delivery-state-alerts"] [data-state="retrying"], [data-testid="delivery-state-alerts"] [data-state="dead"]')`, 20*time.Second)
		b.waitJS("alerts dead after its 2 attempts", `document.querySelector('[data-testid="delivery-state-alerts"] [data-state="dead"]')`, 20*time.Second)
		b.waitText(`[data-testid="message-deliveries"]`, "HTTP 500", 5*time.Second)
		if rows := b.text(`[data-testid="message-deliveries"] tbody`); strings.Contains(rows, "refunds") {
			t.Errorf("the message lists a delivery to refunds, which does not receive order.created: %q", rows)
		}
		if et := b.text(`[data-testid="message-event-type"]`); et != "order.created" {
			t.Errorf("the message's event type shown as %q", et)
		}
		if p := b.text(`[data-testid="message-payload"]`); !strings.Contains(p, `"order_id": 7`) {
			t.Errorf("the message's payload shown as %q", p)
		}
		rcv.mu.Lock()
		hits := fmt.Sprint(rcv.hits["order-7-created.shipping"], rcv.hits["order-7-created.alerts"])
		rcv.mu.Unlock()
		if hits != "[200] [500 500]" {
			t.Errorf("the receivers answered shipping and alerts %s, want [200] [500 500]", hits)
		}

		// A delivery's job opens the job's page, which names its message.
		b.click("delivery-job-shipping")
		b.do("the job view", chromedp.WaitVisible(chromedp.CSS(`[data-testid="job"]`)))
		b.waitText(`[data-testid="job-id"]`, "order-7-created.shipping", 5*time.Second)
		b.waitJS("delivered", `document.querySelector('[data-testid="job-state"] [data-state="delivered"]')`, 5*time.Second)
		b.waitText(`[data-testid="job-fanout"]`, "delivery of message order-7-created to subscription shipping", 5*time.Second)
		b.click("job-message")
		b.waitText(`[data-testid="message-id"]`, "order-7-created", 5*time.Second)

		// The counts move in the list.
		b.eval("back to the subscriptions", `document.getElementById('message-back').click()`)
		b.waitText(`[data-testid="sub-delivered-shipping"]`, "1", 10*time.Second)
		b.waitText(`[data-testid="sub-dead-alerts"]`, "1", 10*time.Second)
		// Its two failures in a row opened alerts' breaker, its own: shipping's is off.
		b.waitJS("alerts' breaker open", `document.querySelector('[data-testid="sub-breaker-alerts"] [data-state="open"]')`, 10*time.Second)
		if br := b.text(`[data-testid="sub-breaker-alerts"]`); !strings.Contains(br, "until ") || !strings.Contains(br, "opens after 2 failures, 1m") {
			t.Errorf("alerts' breaker shown as %q, want open until a time", br)
		}
		if br := b.text(`[data-testid="sub-breaker-shipping"]`); br != "off" {
			t.Errorf("shipping's breaker shown as %q, want off", br)
		}
		b.nav("subscriptions") // as a reader comes back to it: the notices cleared
		b.waitText(`[data-testid="sub-breaker-alerts"]`, "until ", 5*time.Second)
		b.shot("subscriptions")
		b.click("subs-message-open")
		b.waitJS("the message again, alerts dead", `document.querySelector('[data-testid="delivery-state-alerts"] [data-state="dead"]')`, 10*time.Second)
		b.shot("message")
		b.nav("subscriptions")
		b.waitJS("three subscriptions listed", rowCount+` === 3`, 10*time.Second)
		b.do("390px viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		w, err := run(b, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
		if err != nil || w > 390 {
			t.Errorf("the subscriptions view is %vpx wide at a 390px viewport (%v): it scrolls sideways", w, err)
		}
		b.shot("subscriptions-phone")
		b.do("desktop viewport", chromedp.EmulateViewport(1280, 900))

		// Publish from the page: the message opens with its delivery.
		b.click("sub-publish")
		b.do("publish dialog", chromedp.WaitVisible(chromedp.ID("publish-payload")))
		b.fill(map[string]string{"publish-event-type": "order.refunded", "publish-payload": `{"data": {"order_id": 8}}`})
		b.click("publish-save")
		b.waitText(`[data-testid="notice"]`, "published: 2 deliveries", 5*time.Second) // alerts takes every type
		b.waitJS("refunds delivered", `document.querySelector('[data-testid="delivery-state-refunds"] [data-state="delivered"]')`, 20*time.Second)
	})

	t.Run("another tenant's topic and message are a 404", func(t *testing.T) {
		b := b.on(t)
		b.eval("open globex's topic", `location.hash = '#/subscriptions?topic=ledger'`)
		b.waitText(`[data-testid="subs-missing"]`, "404", 10*time.Second)
		b.waitJS("no list shown", `document.getElementById('subs-card').hidden && `+rowCount+` === 0`, 5*time.Second)
		if txt := b.text("main"); strings.Contains(txt, "audit") || strings.Contains(txt, "globex-zzz") {
			t.Errorf("tenant acme sees globex's subscription: %q", txt)
		}
		b.shot("subscriptions-not-found")
		for _, topic := range []string{"ledger", "orders"} {
			b.eval("open globex's message", fmt.Sprintf(`location.hash = '#/message?topic=%s&id=g-1'`, topic))
			b.waitText(`[data-testid="message-missing"]`, "404", 10*time.Second)
			b.waitJS("no message shown", `document.getElementById('message-body').hidden`, 5*time.Second)
		}
		if vis, _ := run(b, chromedp.Evaluate[bool](`!document.getElementById('error').hidden`)); vis {
			t.Errorf("a 404 for another tenant's message also fills the error banner: %q", b.text(`[data-testid="error"]`))
		}
		// Back on its own topic the list shows again.
		b.eval("open orders", `location.hash = '#/subscriptions?topic=orders'`)
		b.waitJS("orders' subscriptions", rowCount+` === 3 && document.getElementById('subs-missing').hidden`, 10*time.Second)
	})

	t.Run("an admin reads any tenant's", func(t *testing.T) {
		b := b.on(t)
		b.load("sign out", chromedp.Click(chromedp.ID("signout")))
		b.signIn(admin)
		b.eval("open globex's topic", `location.hash = '#/subscriptions?tenant=globex&topic=ledger'`)
		b.do("audit listed", chromedp.WaitVisible(chromedp.CSS(`[data-testid="sub-audit"]`)))
		if u := b.text(`[data-testid="sub-url-audit"]`); !strings.HasSuffix(u, "/ok?key=••••••••") {
			t.Errorf("audit's URL shown to an admin as %q, want its query value masked", u)
		}
		b.fill(map[string]string{"subs-message-id": "g-1"})
		b.click("subs-message-open")
		b.waitJS("audit's delivery delivered", `document.querySelector('[data-testid="delivery-state-audit"] [data-state="delivered"]')`, 10*time.Second)
		b.waitText(`[data-testid="message-kv"]`, "globex", time.Second)
	})

	for _, line := range strings.Split(b.logs.String(), "\n") {
		if strings.HasPrefix(line, "exception") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("browser console: %s", line)
		}
	}
	if *updateScreenshots {
		for _, name := range []string{"subscriptions", "message"} {
			src, err := os.ReadFile(filepath.Join(b.dir, name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join("..", "docs", "screenshots", name+".png")
			if err := os.WriteFile(dst, src, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated %s", dst)
		}
	}
}
