package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// The CLI sets and shows success_url and response_bytes, and its job
// table shows each attempt's kept headers and the start of its answer.
func TestCLIDeliveryHistory(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/invoices/7")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"invoice": 7}`))
	}))
	t.Cleanup(rcv.Close)

	out := k.ok("", "topics", "put", "hist", "--callback-url", rcv.URL, "--success-url", ti.rcvURL+"/ok", "--response-bytes", "0")
	if !strings.Contains(out, "success_url") || !strings.Contains(out, ti.rcvURL+"/ok") {
		t.Errorf("topics put said:\n%s", out)
	}
	var topic client.Topic
	k.json(&topic, "topics", "get", "hist")
	if topic.SuccessURL != ti.rcvURL+"/ok" || topic.ResponseBytes != 0 {
		t.Errorf("topics get --json: success_url %q, response_bytes %d", topic.SuccessURL, topic.ResponseBytes)
	}
	k.ok("", "topics", "put", "hist", "--callback-url", rcv.URL)
	topic = client.Topic{}
	k.json(&topic, "topics", "get", "hist")
	if topic.ResponseBytes != 256 || topic.SuccessURL != "" {
		t.Errorf("a put without them: success_url %q, response_bytes %d; want none and the default", topic.SuccessURL, topic.ResponseBytes)
	}
	k.fails(exitError, []string{"topics", "put", "hist", "--callback-url", rcv.URL, "--response-bytes", "20000"}, "response_bytes")

	k.ok("", "jobs", "create", "hist", "--id", "h1", "--success-url", ti.rcvURL+"/mine")
	j := k.waitState("hist", "h1", client.StateDelivered)
	if j.SuccessURL != ti.rcvURL+"/mine" {
		t.Errorf("jobs get --json: success_url %q", j.SuccessURL)
	}
	out = k.ok("", "jobs", "get", "hist", "h1")
	for _, want := range []string{"success_url", "Content-Type: application/json | Location: /invoices/7 | {\"invoice\": 7}"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs get lacks %q:\n%s", want, out)
		}
	}
}
