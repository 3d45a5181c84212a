package server

import (
	"encoding/json"
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
	admin, err := in.Authn.Mint("ops", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, want int) string {
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
