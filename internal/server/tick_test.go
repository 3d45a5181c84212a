package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// An API process with no scanner or worker of its own delivers due jobs
// when POST /v1/tick asks it to, and answers what it did.
func TestTickEndpointDeliversFromAnAPIProcess(t *testing.T) {
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(rcv.Close)
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_ROLES": "api"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	call := adminCaller(t, in)
	call("PUT", "/v1/topics/t?tenant=acme", `{"callback_url": "`+rcv.URL+`"}`, http.StatusCreated)
	for range 3 {
		call("POST", "/v1/topics/t/jobs?tenant=acme", `{"delay": "0s", "payload": 1}`, http.StatusCreated)
	}
	var sum kairos.TickSummary
	if err := json.Unmarshal([]byte(call("POST", "/v1/tick", `{"for": "3s"}`, http.StatusOK)), &sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("tick: %+v", sum)
	if sum.Delivered != 3 || hits.Load() != 3 {
		t.Fatalf("tick delivered %d (receiver: %d), want 3", sum.Delivered, hits.Load())
	}
}

// The instants a POST /v1/tick's claims skip (overlap skip, the previous
// occurrence still in flight) are counted in the API process's
// kairos_occurrences_skipped_total, as a scanner's are.
func TestTickEndpointCountsSkippedInstants(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select { // the first occurrence stays in flight while the tick runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(rcv.Close)
	t.Cleanup(func() { close(release) })
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_ROLES": "api"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	call := adminCaller(t, in)
	call("PUT", "/v1/topics/t?tenant=acme", `{"callback_url": "`+rcv.URL+`", "timeout": "30s"}`, http.StatusCreated)
	call("PUT", "/v1/topics/t/schedules/s?tenant=acme", `{"every": "1s", "overlap": "skip"}`, http.StatusCreated)
	var sc struct {
		Skipped int64 `json:"skipped"`
	}
	for range 10 { // a tick ends once nothing more is due within it: tick again until one skipped
		call("POST", "/v1/tick", `{"for": "2s"}`, http.StatusOK)
		if err := json.Unmarshal([]byte(call("GET", "/v1/topics/t/schedules/s?tenant=acme", "", http.StatusOK)), &sc); err != nil {
			t.Fatal(err)
		}
		if sc.Skipped > 0 {
			break
		}
	}
	if hits.Load() < 1 || sc.Skipped < 1 {
		t.Fatalf("%d callbacks, %d instants skipped; want one in flight and the instants after it skipped", hits.Load(), sc.Skipped)
	}
	want := fmt.Sprintf(`kairos_occurrences_skipped_total{topic="acme/t"} %d`, sc.Skipped)
	if m := call("GET", "/metrics", "", http.StatusOK); !strings.Contains(m, want) {
		t.Fatalf("/metrics lacks %q:\n%s", want, grepLines(m, "kairos_occurrences_skipped_total"))
	}
}

// adminCaller returns a function that calls in's API with an admin token
// and fails t unless the answer has status want; it returns the body.
func adminCaller(t *testing.T, in *Instance) func(method, path, body string, want int) string {
	t.Helper()
	admin, err := in.Authn.Mint("ops", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return func(method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequest(method, in.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		return string(b)
	}
}
