package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/client"
)

// fast retries, so that the tests do not wait.
var fast = client.WithRetryPolicy(client.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: 2 * time.Millisecond})

// flaky answers the first fails requests with status (and Retry-After, if
// set), then 200 with body; it counts the requests.
func flaky(t *testing.T, fails, status int, retryAfter, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n.Add(1) <= int64(fails) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(client.Error{Type: "urn:kairos:problem:unavailable", Title: http.StatusText(status), Status: status, Detail: "try again"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const jobJSON = `{"id":"j1","topic":"t","tenant":"acme","state":"scheduled","run_at":"2026-11-21T10:30:00.250Z","created_at":"2026-11-21T10:00:00.000Z","attempts":0,"result":"created"}`

func TestRetriesOnlyIdempotentCalls(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		call  func(*client.Client) error
		sends int64 // requests made against a server that answers 503 twice, then succeeds
		ok    bool
	}{
		{"GET", func(c *client.Client) error { _, err := c.GetJob(ctx, "t", "j1"); return err }, 3, true},
		{"DELETE", func(c *client.Client) error { return c.CancelJob(ctx, "t", "j1") }, 3, true},
		{"PUT", func(c *client.Client) error {
			_, _, err := c.PutTopic(ctx, "t", client.TopicRequest{CallbackURL: "https://x.example"})
			return err
		}, 3, true},
		{"create with an id", func(c *client.Client) error {
			_, err := c.CreateJob(ctx, "t", client.JobRequest{ID: "j1"})
			return err
		}, 3, true},
		{"create without an id", func(c *client.Client) error { _, err := c.CreateJob(ctx, "t", client.JobRequest{}); return err }, 1, false},
		{"batch, every job with an id", func(c *client.Client) error {
			_, err := c.CreateJobs(ctx, "t", []client.JobRequest{{ID: "a"}, {ID: "b"}})
			return err
		}, 3, true},
		{"batch, a job without an id", func(c *client.Client) error {
			_, err := c.CreateJobs(ctx, "t", []client.JobRequest{{ID: "a"}, {}})
			return err
		}, 1, false},
		{"reschedule", func(c *client.Client) error {
			_, err := c.RescheduleJob(ctx, "t", "j1", client.RescheduleRequest{Delay: client.Duration(time.Hour)})
			return err
		}, 1, false},
		{"replay", func(c *client.Client) error { _, err := c.RetryJob(ctx, "t", "j1"); return err }, 1, false},
		{"rotate", func(c *client.Client) error { _, err := c.RotateSigningKeys(ctx); return err }, 1, false},
		{"put schedule", func(c *client.Client) error {
			_, err := c.PutSchedule(ctx, "t", "s", client.ScheduleRequest{Every: client.Duration(time.Minute)})
			return err
		}, 3, true},
		{"pause schedule", func(c *client.Client) error { _, err := c.PauseSchedule(ctx, "t", "s"); return err }, 3, true},
		{"trigger schedule", func(c *client.Client) error { _, err := c.TriggerSchedule(ctx, "t", "s"); return err }, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := flaky(t, 2, http.StatusServiceUnavailable, "", jobJSON)
			err := tt.call(newClient(t, srv.URL, fast))
			if got := n.Load(); got != tt.sends {
				t.Errorf("sent %d times, want %d", got, tt.sends)
			}
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok %v", err, tt.ok)
			}
			if !tt.ok && client.StatusCode(err) != http.StatusServiceUnavailable {
				t.Errorf("err = %v, want the 503 problem", err)
			}
		})
	}
}

func TestRetryStatuses(t *testing.T) {
	for _, tt := range []struct {
		status int
		retry  bool
	}{{429, true}, {502, true}, {503, true}, {504, true}, {500, false}, {400, false}, {404, false}, {409, false}} {
		srv, n := flaky(t, 1, tt.status, "", jobJSON)
		_, err := newClient(t, srv.URL, fast).GetJob(context.Background(), "t", "j1")
		if got := n.Load() == 2; got != tt.retry {
			t.Errorf("%d: retried %v, want %v (err %v)", tt.status, got, tt.retry, err)
		}
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv, n := flaky(t, 1, http.StatusTooManyRequests, "1", jobJSON)
	start := time.Now()
	if _, err := newClient(t, srv.URL, fast).GetJob(context.Background(), "t", "j1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || n.Load() != 2 {
		t.Errorf("retried after %v (%d requests); Retry-After said 1s", d, n.Load())
	}
}

func TestRetryAfterOverTheCapEndsRetries(t *testing.T) {
	srv, n := flaky(t, 1, http.StatusServiceUnavailable, "120", jobJSON)
	_, err := newClient(t, srv.URL, fast).GetJob(context.Background(), "t", "j1")
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != 2*time.Minute || n.Load() != 1 {
		t.Fatalf("err %v (%d requests); want the 503 at once, with RetryAfter 2m", err, n.Load())
	}
}

func TestRetryWaitPastTheDeadlineEndsRetries(t *testing.T) {
	srv, n := flaky(t, 1, http.StatusServiceUnavailable, "5", jobJSON)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := newClient(t, srv.URL, fast).GetJob(ctx, "t", "j1")
	if client.StatusCode(err) != 503 || n.Load() != 1 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("err %v after %v (%d requests); want the 503 at once", err, time.Since(start), n.Load())
	}
}

func TestCancelledWhileWaitingToRetry(t *testing.T) {
	srv, _ := flaky(t, 1, http.StatusServiceUnavailable, "10", jobJSON)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := newClient(t, srv.URL, fast).GetJob(ctx, "t", "j1")
	if !errors.Is(err, context.Canceled) || client.StatusCode(err) != 503 {
		t.Fatalf("err %v; want both the 503 and context.Canceled", err)
	}
}

// TestRetriesTransportErrors: a server that drops the first connection
// without answering; a GET is sent again, a create without an id is not.
func TestRetriesTransportErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		call  func(context.Context, *client.Client) error
		sends int64
	}{
		{"GET", func(ctx context.Context, c *client.Client) error { _, err := c.GetJob(ctx, "t", "j1"); return err }, 2},
		{"create without an id", func(ctx context.Context, c *client.Client) error {
			_, err := c.CreateJob(ctx, "t", client.JobRequest{})
			return err
		}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
					return
				}
				io.WriteString(w, jobJSON)
			}))
			defer srv.Close()
			err := tt.call(context.Background(), newClient(t, srv.URL, fast))
			var ue *url.Error
			if n.Load() != tt.sends || (tt.sends == 1) != errors.As(err, &ue) {
				t.Fatalf("%d requests, err %v; want %d", n.Load(), err, tt.sends)
			}
		})
	}
}

func TestProblemIsATypedError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"urn:kairos:problem:validation","title":"Invalid request","status":400,`+
			`"detail":"invalid request: delay: \"soon\" is not a duration","errors":[{"field":"delay","message":"\"soon\" is not a duration"}]}`)
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL).CreateJob(context.Background(), "t", client.JobRequest{})
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err %T %v, want *client.Error", err, err)
	}
	want := &client.Error{Type: "urn:kairos:problem:validation", Title: "Invalid request", Status: 400,
		Detail: `invalid request: delay: "soon" is not a duration`, Errors: []client.FieldError{{Field: "delay", Message: `"soon" is not a duration`}}}
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("error (-want +got):\n%s", d)
	}
	if got := err.Error(); got != `400 Invalid request: invalid request: delay: "soon" is not a duration` {
		t.Errorf("Error() = %q", got)
	}
	if client.IsNotFound(err) || client.IsConflict(err) {
		t.Error("a 400 is neither not found nor a conflict")
	}
}

func TestNonProblemAnswerIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<h1>nothing here</h1>")
	}))
	defer srv.Close()
	err := newClient(t, srv.URL).DeleteTopic(context.Background(), "t")
	if !client.IsNotFound(err) || err.Error() != "404 Not Found: <h1>nothing here</h1>" {
		t.Fatalf("err %v", err)
	}
}

// TestRequests checks what goes on the wire: path escapes, the tenant and
// reveal parameters, headers, and a payload sent byte for byte.
func TestRequests(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("User-Agent")+" "+
			r.Header.Get("Content-Type")+" "+string(b))
		mu.Unlock()
		io.WriteString(w, jobJSON)
	}))
	defer srv.Close()
	ctx := context.Background()
	c := newClient(t, srv.URL+"/kairos/", client.WithToken("tok"), client.WithUserAgent("test/1"))
	at := time.Date(2026, 11, 21, 10, 30, 0, 250e6, time.FixedZone("CET", 3600))
	if _, err := c.CreateJob(ctx, "orders", client.JobRequest{ID: "a:b@c", RunAt: at,
		Payload: json.RawMessage(` { "note": "caf\u00e9 <b>",  "n": 1.50 } `), CallbackURL: "https://x.example/?a=1&b=2"}); err != nil {
		t.Fatal(err)
	}
	admin := c.With(client.WithTenant("acme"), client.WithRevealedHeaders())
	if _, err := admin.GetJob(ctx, "orders", "a:b@c"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ListJobs(ctx, "orders", client.ListOptions{State: client.StateDead, Limit: 5, Cursor: "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RescheduleJob(ctx, "orders", "x", client.RescheduleRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateJobs(ctx, "orders", []client.JobRequest{{Payload: json.RawMessage("[1, 2]")}, {Delay: client.Duration(90 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutSchedule(ctx, "orders", "nightly", client.ScheduleRequest{Cron: "0 3 * * *", Timezone: "Europe/Berlin",
		StartAt: at, Payload: json.RawMessage(` [ "a&b" ] `)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutSchedule(ctx, "orders", "beat", client.ScheduleRequest{Every: client.Duration(90 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	// neither RunAt nor Delay: neither is sent, which the API reads as now
	if _, err := c.CreateJob(ctx, "orders", client.JobRequest{}); err != nil {
		t.Fatal(err)
	}
	// a time finer than a millisecond goes with all its digits, for the
	// server to round up (run_at, start_at) or down (end_at)
	fine := time.Date(2026, 11, 21, 10, 0, 52, 522490000, time.UTC)
	if _, err := c.CreateJob(ctx, "orders", client.JobRequest{RunAt: fine}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutSchedule(ctx, "orders", "fine", client.ScheduleRequest{Every: client.Duration(time.Hour), StartAt: fine, EndAt: fine.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`POST /kairos/v1/topics/orders/jobs Bearer tok test/1 application/json {"id":"a:b@c","callback_url":"https://x.example/?a=1&b=2","run_at":"2026-11-21T09:30:00.250Z","payload":{ "note": "caf\u00e9 <b>",  "n": 1.50 }}`,
		`GET /kairos/v1/topics/orders/jobs/a:b@c?reveal=headers&tenant=acme Bearer tok test/1  `,
		`GET /kairos/v1/topics/orders/jobs?cursor=abc&limit=5&state=dead&tenant=acme Bearer tok test/1  `,
		`PATCH /kairos/v1/topics/orders/jobs/x Bearer tok test/1 application/json {"delay":"0s"}`,
		`POST /kairos/v1/topics/orders/jobs/batch Bearer tok test/1 application/json {"jobs":[{"payload":[1, 2]},{"delay":"1m30s"}]}`,
		`PUT /kairos/v1/topics/orders/schedules/nightly Bearer tok test/1 application/json {"cron":"0 3 * * *","timezone":"Europe/Berlin","start_at":"2026-11-21T09:30:00.250Z","payload":[ "a&b" ]}`,
		`PUT /kairos/v1/topics/orders/schedules/beat Bearer tok test/1 application/json {"every":"1m30s"}`,
		`POST /kairos/v1/topics/orders/jobs Bearer tok test/1 application/json {}`,
		`POST /kairos/v1/topics/orders/jobs Bearer tok test/1 application/json {"run_at":"2026-11-21T10:00:52.52249Z"}`,
		`PUT /kairos/v1/topics/orders/schedules/fine Bearer tok test/1 application/json {"every":"1h0m0s","start_at":"2026-11-21T10:00:52.52249Z","end_at":"2026-11-21T11:00:52.52249Z"}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

func TestInvalidPayloadIsRefusedBeforeSending(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1")
	_, err := c.CreateJob(context.Background(), "t", client.JobRequest{Payload: json.RawMessage("not json")})
	if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("err %v", err)
	}
	_, err = c.PutSchedule(context.Background(), "t", "s", client.ScheduleRequest{Payload: json.RawMessage("{")})
	if err == nil || !strings.Contains(err.Error(), "schedule payload is not valid JSON") {
		t.Fatalf("err %v", err)
	}
	_, err = c.CreateJobs(context.Background(), "t", []client.JobRequest{{}, {Payload: json.RawMessage("{")}})
	if err == nil || !strings.HasPrefix(err.Error(), "jobs[1]: ") {
		t.Fatalf("err %v", err)
	}
}

func TestNewRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://", "http://x/?a=1"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
}

// TestPagesFollowCursors walks three pages with AllJobs, and stops when
// the loop does.
func TestPagesFollowCursors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			io.WriteString(w, `{"jobs":[{"id":"a"},{"id":"b"}],"next_cursor":"p2"}`)
		case "p2":
			io.WriteString(w, `{"jobs":[],"next_cursor":"p3"}`)
		case "p3":
			io.WriteString(w, `{"jobs":[{"id":"c"}]}`)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	var ids []string
	for j, err := range c.AllJobs(context.Background(), "t", client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if d := cmp.Diff([]string{"a", "b", "c"}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	for j := range c.AllDead(context.Background(), client.ListOptions{}) {
		if j.ID != "a" {
			t.Errorf("first dead job %q", j.ID)
		}
		break
	}
	if _, err := c.ListDead(context.Background(), client.ListOptions{State: client.StateReady}); err == nil {
		t.Error("ListDead took a state other than dead")
	}
}

// TestUnreachable: no server at all is a transport error, not an *Error.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = newClient(t, "http://"+addr, fast).ListTopics(context.Background())
	var ue *url.Error
	if !errors.As(err, &ue) || client.StatusCode(err) != 0 {
		t.Fatalf("err %T %v, want a *url.Error", err, err)
	}
}

// TestCreateJobsEveryItemFailed returns the results with the error when
// the server says every item of a batch failed.
func TestCreateJobsEveryItemFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"urn:kairos:problem:batch-failed","title":"Every job of the batch failed","status":400,
			"detail":"none of the 1 jobs was stored","created":0,"replaced":0,"failed":1,
			"results":[{"index":0,"status":400,"error":{"type":"urn:kairos:problem:validation","title":"Invalid request","status":400,
			"errors":[{"field":"jobs[0].delay","message":"bad"}]}}]}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	res, err := c.CreateJobs(context.Background(), "orders", []client.JobRequest{{}})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Type != "urn:kairos:problem:batch-failed" {
		t.Fatalf("err %v", err)
	}
	if res == nil || res.Failed != 1 || len(res.Results) != 1 || res.Results[0].Error == nil || res.Results[0].Error.Errors[0].Field != "jobs[0].delay" {
		t.Fatalf("results %+v", res)
	}
}

// A Duration reads what the API accepts: Go syntax, and days.
func TestDurationReadsDays(t *testing.T) {
	for in, want := range map[string]time.Duration{`"90s"`: 90 * time.Second, `"7d"`: 7 * 24 * time.Hour, `"1d12h"`: 36 * time.Hour} {
		var d client.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("%s read as %v (%v), want %v", in, time.Duration(d), err, want)
		}
	}
	var d client.Duration
	if err := json.Unmarshal([]byte(`"7 days"`), &d); err == nil {
		t.Errorf(`"7 days" read as %v`, time.Duration(d))
	}
}
