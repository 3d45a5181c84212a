package api

import (
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
		if _, err := req.toJob("acme", "orders", now, DefaultMaxPayload, ""); err != nil {
			b.Fatal(err)
		}
	}
}
