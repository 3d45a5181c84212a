package client_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
)

// What the server sends, a success's text body and a failure's binary
// one, reads back with ParseNotification and Body byte for byte.
func TestParseNotificationReadsWhatTheServerSends(t *testing.T) {
	j := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "o1"}, Attempts: 3}
	a := kairos.Attempt{N: 3, At: time.UnixMilli(1_750_000_000_000), Status: 201,
		ResponseHeaders: map[string]string{"Location": "/x/1"}}
	text := []byte(`{"invoice":"№ 7"}`)
	n, err := client.ParseNotification(kairos.SuccessNotice("https://h.example/ok", j, a, text).Body)
	if err != nil {
		t.Fatal(err)
	}
	want := client.Notification{Type: client.NoticeDelivered, JobID: "o1", Topic: "orders", Tenant: "acme", Attempt: 3,
		Status: 201, ResponseHeaders: map[string]string{"Location": "/x/1"}, Response: string(text)}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("success notification (-want +got):\n%s", diff)
	}
	binary := []byte{0xff, 0x00, 0xfe, 'x'}
	a.Status, a.Error = 500, "callback answered 500 Internal Server Error"
	f, err := client.ParseNotification(kairos.FailureNotice("https://h.example/dead", j, a, binary, kairos.StateDead, a.At).Body)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != client.NoticeDead || f.State != "dead" || f.Error != a.Error || f.ResponseEncoding != "base64" || f.LastAttempt == nil {
		t.Errorf("failure notification = %+v", f)
	}
	if b, _ := f.Body(); !bytes.Equal(b, binary) {
		t.Errorf("Body() = %q; want %q", b, binary)
	}
}

// FuzzParseNotification: no input panics, and a notification it accepts
// encodes and parses back to the same one.
func FuzzParseNotification(f *testing.F) {
	f.Add([]byte(`{"type":"job.delivered","job_id":"a","topic":"t","tenant":"x","attempt":1,"status":200,"response_headers":{},"response":"ok"}`))
	f.Add([]byte(`{"type":"job.dead","job_id":"a","response":"/w==","response_encoding":"base64","state":"dead","dead_at":"2026-01-02T03:04:05.000Z"}`))
	f.Add([]byte(`{"type":"job.dead","job_id":"a","response":"%%%","response_encoding":"base64"}`))
	f.Add([]byte(`{"type":"job.dead","job_id":"a","response_encoding":"gzip"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := client.ParseNotification(body)
		if err != nil {
			return
		}
		if _, err := n.Body(); err != nil {
			t.Fatalf("ParseNotification accepted a notification whose Body fails: %v", err)
		}
		again, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		m, err := client.ParseNotification(again)
		if err != nil {
			t.Fatalf("re-encoded notification refused: %v\n%s", err, again)
		}
		if diff := cmp.Diff(n, m, cmp.Comparer(func(a, b client.Time) bool { return a.Equal(b.Time) })); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
