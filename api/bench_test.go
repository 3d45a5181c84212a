package api

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkDecodeJobRequest is the API's own work on one create, before
// Redis: strict JSON decoding and validation of a typical request.
func BenchmarkDecodeJobRequest(b *testing.B) {
	body := []byte(`{"id":"order-1234","run_at":"2026-11-21T10:30:00.250Z",` +
		`"payload":{"order":1234,"state":"unpaid","customer":"c_42"},` +
		`"headers":{"X-Order-Ref":"1234"},"max_attempts":5,"timeout":"10s"}`)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var req jobRequest
		if err := decodeBytes(body, &req); err != nil {
			b.Fatal(err)
		}
		if _, err := req.toJob("acme", "orders", now, DefaultMaxPayload, false); err != nil {
			b.Fatal(err)
		}
	}
}

// benchJob is the body BenchmarkCreateJob sends, with the id left to fill.
const benchJob = `{"id":"order-%d","delay":"30m","payload":{"order":%d,"state":"unpaid","customer":"c_42"},` +
	`"headers":{"X-Order-Ref":"1234"},"max_attempts":5,"timeout":"10s"}`

// benchCreate serves b.N requests made by body to the API in process, on
// the test redis-server: the handler's CPU and allocations with Redis's
// round trips, minus HTTP's transport.
func benchCreate(b *testing.B, path string, body func(i int) []byte) {
	e := newEnv(b, Config{})
	h := e.srv.Config.Handler
	authz := e.token(b, "acme", false)
	e.putTopic(b, authz, "orders", obj{"callback_url": "https://example.com/hook"})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body(i)))
		req.Header.Set("Authorization", authz)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		i++
	}
}

// BenchmarkCreateJob is one create through the handler.
func BenchmarkCreateJob(b *testing.B) {
	benchCreate(b, "/v1/topics/orders/jobs", func(i int) []byte { return fmt.Appendf(nil, benchJob, i, i) })
}

// BenchmarkCreateJobsBatch is a batch of 100 creates through the handler.
func BenchmarkCreateJobsBatch(b *testing.B) {
	benchCreate(b, "/v1/topics/orders/jobs/batch", func(i int) []byte {
		out := []byte(`{"jobs":[`)
		for k := range 100 {
			if k > 0 {
				out = append(out, ',')
			}
			out = fmt.Appendf(out, benchJob, i*100+k, k)
		}
		return append(out, "]}"...)
	})
}
