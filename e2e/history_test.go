package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/verify"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// answer is what the answering receiver says to one job's attempt.
type answer struct {
	status int
	header map[string]string
	body   []byte
}

// answering is a receiver that answers each job (by Kairos-Job-Id) with
// its answers in turn, the last one again once they run out.
func answering(t *testing.T, by map[string][]answer) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Kairos-Job-Id")
		as := by[id]
		if len(as) == 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		n := 1
		if v := r.Header.Get("Kairos-Attempt"); v != "" {
			n = int(v[0] - '0')
		}
		a := as[min(n, len(as))-1]
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		w.Write(a.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

var fastBackoff = &client.Backoff{Initial: client.Duration(100 * time.Millisecond), Max: client.Duration(100 * time.Millisecond)}

// Every attempt keeps its answer's start, up to the topic's
// response_bytes, and its kept headers: a failure and a delivery alike,
// in attempt_log and last_attempt; response_bytes 0 keeps no body.
func TestAttemptsKeepTheirAnswers(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	rcv := answering(t, map[string][]answer{
		"a": {
			{500, map[string]string{"Content-Type": "text/plain", "Retry-After": "0", "X-Not-Kept": "1"}, []byte("database is down, try later")},
			{201, map[string]string{"Content-Type": "application/json", "Location": "/invoices/7"}, []byte(`{"invoice":7,"lines":[1,2,3]}`)},
		},
		"n": {{200, map[string]string{"Content-Type": "application/json"}, []byte(`{"ok":true}`)}},
	})
	none := 0
	e.putTopicWith("short", client.TopicRequest{CallbackURL: rcv.URL, ResponseBytes: ptr(16), CallbackSettings: client.CallbackSettings{
		Backoff: fastBackoff,
	}})
	e.putTopicWith("none", client.TopicRequest{CallbackURL: rcv.URL, ResponseBytes: &none})
	e.create("short", client.JobRequest{ID: "a"})
	e.create("none", client.JobRequest{ID: "n"})

	j := e.waitState("short", "a", client.StateDelivered, 20*time.Second)
	got := make([]client.Attempt, len(j.AttemptLog))
	for i, a := range j.AttemptLog {
		got[i] = client.Attempt{Status: a.Status, Response: a.Response, ResponseHeaders: a.ResponseHeaders}
	}
	want := []client.Attempt{
		{Status: 500, Response: "database is down", ResponseHeaders: map[string]string{"Content-Type": "text/plain", "Retry-After": "0"}},
		{Status: 201, Response: `{"invoice":7,"li`, ResponseHeaders: map[string]string{"Content-Type": "application/json", "Location": "/invoices/7"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempt log (-want +got):\n%s", diff)
	}
	if j.LastAttempt == nil || j.LastAttempt.Response != want[1].Response || j.LastAttempt.ResponseHeaders["Location"] != "/invoices/7" {
		t.Errorf("last_attempt = %+v", j.LastAttempt)
	}

	n := e.waitState("none", "n", client.StateDelivered, 20*time.Second)
	if n.LastAttempt == nil || n.LastAttempt.Response != "" || n.LastAttempt.ResponseHeaders["Content-Type"] != "application/json" {
		t.Errorf("response_bytes 0: last_attempt = %+v; want no response, its headers", n.LastAttempt)
	}
}

func ptr[T any](v T) *T { return &v }

// verifyNotice checks a notification's two signatures, with kairos's
// verify package and the Standard Webhooks library, and decodes it.
func verifyNotice(t *testing.T, e *engine, h hit) client.Notification {
	t.Helper()
	keys, err := e.c.GetSigningKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Callback([]string{keys.Current, keys.Next}, h.Header, h.Body, verify.Options{}); err != nil {
		t.Errorf("signature: %v", err)
	}
	wh, err := standardwebhooks.NewWebhook(keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.Body, h.Header); err != nil {
		t.Errorf("standard-webhooks Verify of the notification: %v", err)
	}
	n, err := client.ParseNotification(h.Body)
	if err != nil {
		t.Fatalf("%v: %.200s", err, h.Body)
	}
	return n
}

// After a delivery, the topic's success_url gets one signed notification
// that carries the receiver's whole answer up to 64 KiB (while the job's
// log keeps response_bytes of it), a job's own success_url is told
// instead of its topic's, a body that is not UTF-8 travels in base64, and
// a notification's own delivery notifies no one.
func TestSuccessNotification(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes
	binary := []byte{0x89, 'P', 'N', 'G', 0xff, 0x00, 0xfe}
	rcv := answering(t, map[string][]answer{
		"big": {{200, map[string]string{"Content-Type": "text/plain", "Location": "/next"}, big}},
		"bin": {{202, map[string]string{"Content-Type": "image/png"}, binary}},
	})
	ok := newReceiver(t, nil)
	own := newReceiver(t, nil)
	e.putTopicWith("orders", client.TopicRequest{
		CallbackURL:      rcv.URL,
		SuccessURL:       ok.URL,
		CallbackSettings: client.CallbackSettings{Headers: map[string]string{"X-Partner-Key": "k-secret"}},
	})
	e.create("orders", client.JobRequest{ID: "big"})
	e.create("orders", client.JobRequest{ID: "bin", SuccessURL: own.URL})

	h := ok.waitHits(t, 1, 20*time.Second)[0]
	n := verifyNotice(t, e, h)
	if got := h.Header.Get("Kairos-Job-Id"); got != kairos.SuccessNoticeID("big", 1) {
		t.Errorf("notification job id %q", got)
	}
	if h.Header.Get("X-Partner-Key") != "" {
		t.Error("the topic's header went to the success URL")
	}
	want := client.Notification{Type: client.NoticeDelivered, JobID: "big", Topic: "orders", Tenant: "acme", Attempt: 1, Status: 200,
		ResponseHeaders: map[string]string{"Content-Type": "text/plain", "Location": "/next"}, Response: string(big[:64<<10])}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("success notification (-want +got):\n%.2000s", diff)
	}
	if j := e.job("orders", "big"); j.LastAttempt == nil || j.LastAttempt.Response != string(big[:kairos.DefaultResponseBytes]) {
		t.Errorf("the job's log keeps %d bytes of the answer; want the default %d", len(j.LastAttempt.Response), kairos.DefaultResponseBytes)
	}

	h = own.waitHits(t, 1, 20*time.Second)[0]
	n = verifyNotice(t, e, h)
	body, err := n.Body()
	if n.JobID != "bin" || n.Status != 202 || n.ResponseEncoding != "base64" || err != nil || !bytes.Equal(body, binary) {
		t.Errorf("binary answer: %+v, body %q, %v", n, body, err)
	}
	if e.waitState("orders", kairos.SuccessNoticeID("big", 1), client.StateDelivered, 10*time.Second) == nil {
		t.Fatal("no notification job")
	}
	waitSettled(t, e.store) // a wrong second one would have come
	if len(ok.all()) != 1 || len(own.all()) != 1 {
		t.Errorf("%d and %d success notifications, want 1 each (the topic's URL was not told of the job with its own)", len(ok.all()), len(own.all()))
	}
}

// A job that goes dead tells its failure_url in the same envelope, with
// state dead, the last error and the last answer whole; the fields failure
// notifications had before stay.
func TestFailureNotificationEnvelope(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	long := strings.Repeat("stack frame\n", 2000) // 24,000 bytes
	rcv := answering(t, map[string][]answer{
		"doomed": {{500, map[string]string{"Content-Type": "text/plain"}, []byte(long)}},
	})
	failed := newReceiver(t, nil)
	e.putTopicWith("orders", client.TopicRequest{CallbackURL: rcv.URL, FailureURL: failed.URL, CallbackSettings: client.CallbackSettings{
		MaxAttempts: 2,
		Backoff:     fastBackoff,
	}})
	e.create("orders", client.JobRequest{ID: "doomed"})
	h := failed.waitHits(t, 1, 20*time.Second)[0]
	n := verifyNotice(t, e, h)
	if got := h.Header.Get("Kairos-Job-Id"); got != kairos.NoticeID("doomed", 2) {
		t.Errorf("notification job id %q", got)
	}
	if n.Type != client.NoticeDead || n.State != "dead" || n.JobID != "doomed" || n.Attempt != 2 || n.Status != 500 ||
		n.Error != "callback answered 500 Internal Server Error" || n.Response != long ||
		n.ResponseHeaders["Content-Type"] != "text/plain" {
		t.Errorf("failure notification: %.500s", h.Body)
	}
	if n.Attempts != 2 || n.DeadAt == nil || n.LastAttempt == nil || n.LastAttempt.Status != 500 {
		t.Errorf("the fields failure notifications had before: attempts %d, dead_at %v, last_attempt %+v", n.Attempts, n.DeadAt, n.LastAttempt)
	}
}
