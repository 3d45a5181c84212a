package callback

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// serve starts a test receiver on 127.0.0.1, closed when the test ends.
func serve(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// ignoreTiming leaves Duration and Err out of a Result comparison.
var ignoreTiming = cmpopts.IgnoreFields(Result{}, "Duration", "Err")

func TestFireOK(t *testing.T) {
	type seen struct {
		Method, ContentType, Custom string
		Body                        string
	}
	got := make(chan seen, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("X-Custom"), string(body)}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "thanks")
	})
	c := NewClient(true, slog.New(slog.DiscardHandler))
	res := c.Fire(t.Context(), Request{
		URL:    srv.URL + "/hook",
		Header: http.Header{"Content-Type": {"application/json"}, "X-Custom": {"1"}},
		Body:   []byte(`{"a":1}`),
	})
	if diff := cmp.Diff(Result{Status: 202, Body: []byte("thanks"), Header: map[string]string{"Content-Type": "text/plain; charset=utf-8"}}, res, ignoreTiming); diff != "" || res.Err != nil {
		t.Fatalf("Result (-want +got):\n%s\nErr: %v", diff, res.Err)
	}
	if !res.OK() {
		t.Error("OK() = false for a 202")
	}
	if diff := cmp.Diff(seen{"POST", "application/json", "1", `{"a":1}`}, <-got); diff != "" {
		t.Errorf("request seen by the receiver (-want +got):\n%s", diff)
	}
}

func TestFireStatuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    Result
	}{
		{
			name: "500 with snippet",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "database is down", http.StatusInternalServerError)
			},
			want: Result{Status: 500, Body: []byte("database is down\n"), Header: map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
		},
		{
			name: "429 with Retry-After",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "120")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			want: Result{Status: 429, RetryAfter: 2 * time.Minute, HasRetryAfter: true, Header: map[string]string{"Retry-After": "120"}},
		},
		{
			name: "503 without Retry-After",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			want: Result{Status: 503},
		},
		{
			name: "Retry-After ignored on 500",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "120")
				w.WriteHeader(http.StatusInternalServerError)
			},
			want: Result{Status: 500, Header: map[string]string{"Retry-After": "120"}},
		},
		{
			name: "410 Gone is permanent",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "120")
				http.Error(w, "unsubscribed", http.StatusGone)
			},
			want: Result{Status: 410, Body: []byte("unsubscribed\n"), Permanent: true, Header: map[string]string{"Retry-After": "120", "Content-Type": "text/plain; charset=utf-8"}},
		},
		{
			name: "invalid UTF-8 in the body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte("bad \xff\xfe input"))
			},
			want: Result{Status: 400, Body: []byte("bad \xff\xfe input"), Header: map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handler)
			res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL})
			if diff := cmp.Diff(tc.want, res, ignoreTiming); diff != "" || res.Err != nil {
				t.Fatalf("Result (-want +got):\n%s\nErr: %v", diff, res.Err)
			}
			if res.OK() {
				t.Errorf("OK() = true for %d", res.Status)
			}
		})
	}
}

func TestFireRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := serve(t, mux.ServeHTTP)
	res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL + "/hook"})
	if res.Status != http.StatusFound || res.Err != nil || res.OK() {
		t.Errorf("Fire = status %d, err %v; want 302 and not OK", res.Status, res.Err)
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect target was called %d times, want 0", n)
	}
}

func TestFireTimeout(t *testing.T) {
	done := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		<-r.Context().Done()
	})
	start := time.Now()
	res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL, Timeout: 200 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Fire took %v with a 200ms timeout", elapsed)
	}
	if res.Err == nil || res.Err.Error() != "timeout after 200ms" || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want \"timeout after 200ms\" wrapping context.DeadlineExceeded", res.Err)
	}
	if res.Status != 0 || res.OK() || res.Permanent {
		t.Errorf("Result = %+v, want no status, not OK, not permanent", res)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver's request context was not cancelled")
	}
}

func TestFireCancelled(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	res := NewClient(true, nil).Fire(ctx, Request{URL: srv.URL, Timeout: time.Minute})
	if !errors.Is(res.Err, context.Canceled) || !strings.Contains(res.Err.Error(), "abandoned") {
		t.Errorf("Err = %v, want an abandoned attempt wrapping context.Canceled", res.Err)
	}
}

func TestFireHugeBody(t *testing.T) {
	const size = 50 << 20
	type outcome struct {
		written int
		err     error
	}
	done := make(chan outcome, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "52428800")
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB
		var o outcome
		for o.written < size && o.err == nil {
			var n int
			n, o.err = w.Write(chunk)
			o.written += n
		}
		done <- o
	})
	start := time.Now()
	res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Fire took %v for a 50 MB response", elapsed)
	}
	want := strings.Repeat("0123456789abcdef", 32)
	if res.Status != 200 || string(res.Body) != want || res.Err != nil {
		t.Fatalf("Result = %d, %d-byte body, %v; want 200, the first 512 bytes", res.Status, len(res.Body), res.Err)
	}
	select {
	case o := <-done:
		if o.err == nil || o.written >= size {
			t.Errorf("the receiver wrote %d bytes, err %v; want the client to hang up early", o.written, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver is still writing")
	}
}

func TestFireConnectionReset(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	})
	res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL, Body: []byte("x")})
	if res.Err == nil || res.Status != 0 || res.Permanent {
		t.Fatalf("Result = %+v, want a transient error", res)
	}
	if msg := res.Err.Error(); msg != "connection reset by peer" && msg != "connection closed before a response" {
		t.Errorf("Err = %q, want a reset or a closed connection", msg)
	}
}

func TestFireRefusedAndBlocked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	res := NewClient(true, nil).Fire(t.Context(), Request{URL: "http://" + addr})
	if res.Err == nil || res.Err.Error() != "connection refused" || res.Permanent {
		t.Errorf("Result = %+v, want a transient \"connection refused\"", res)
	}

	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the blocked receiver was called") })
	res = NewClient(false, nil).Fire(t.Context(), Request{URL: srv.URL})
	var blocked *BlockedAddressError
	if !errors.As(res.Err, &blocked) || res.Permanent || res.OK() {
		t.Fatalf("Result = %+v, want a *BlockedAddressError, retried like a connection error", res)
	}
	// refused after resolution: the message names the kind of address, not
	// the address (what an internal host name resolves to is nobody's business)
	want := "callback target refused: its host resolves to a loopback address (set KAIROS_ALLOW_PRIVATE_URLS=1 or --allow-private-urls to allow)"
	if res.Err.Error() != want || !blocked.Resolved || blocked.Addr.String() != "127.0.0.1" {
		t.Errorf("Err = %q (%+v), want %q, the address kept in Addr", res.Err, blocked, want)
	}
}

func TestFireBadInput(t *testing.T) {
	c := NewClient(true, slog.New(slog.DiscardHandler))
	for _, req := range []Request{
		{},
		{URL: "::not a url"},
		{URL: "ftp://example.com/"},
		{URL: "http://127.0.0.1:1", Method: "BAD METHOD"},
		{URL: "http://127.0.0.1:1", Header: http.Header{"X-Evil": {"a\r\nb"}}},
		{URL: "http://127.0.0.1:1", Header: http.Header{"Bad Name": {"x"}}},
		{URL: "http://[::1", Timeout: -1},
		{URL: "http://no-such-host.invalid/", Timeout: 5 * time.Second},
	} {
		res := c.Fire(t.Context(), req)
		if res.Err == nil || res.OK() {
			t.Errorf("Fire(%+v) = %+v, want an error", req, res)
			continue
		}
		t.Logf("%q: %v", req.URL, res.Err)
	}
}

func TestValidUTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"héllo", "héllo"},
		{"cut é"[:5], "cut "},       // half of é at the end
		{"cut 😀"[:6], "cut "},       // half of a 4-byte rune
		{"a\xffb", "a?b"},           // invalid in the middle
		{"\xff\xfe\xfd", "?"},       // a run becomes one '?'
		{"\xf0\x9f\x98\x80x", "😀x"}, // whole rune kept
	} {
		got := validUTF8([]byte(tc.in))
		if got != tc.want || !utf8.ValidString(got) || len(got) > len(tc.in) {
			t.Errorf("validUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
