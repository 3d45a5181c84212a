package api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawRequest opens a connection to the env's server and sends head (a
// request line and headers, the blank line included) and body.
func (e *env) rawRequest(tb testing.TB, head, body string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+body); err != nil {
		tb.Fatal(err)
	}
	return conn
}

// closedWithin reads conn until the server closes it, at most within, and
// returns the status line it answered ("" for none); an error when it is
// still open then.
func closedWithin(conn net.Conn, within time.Duration) (string, error) {
	conn.SetReadDeadline(time.Now().Add(within))
	br := bufio.NewReader(conn)
	status, _ := br.ReadString('\n')
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return strings.TrimSpace(status), fmt.Errorf("still open after %s", within)
	}
	return strings.TrimSpace(status), nil // EOF, or reset by the server
}

// trickle writes b to conn every 100 ms, in a goroutine of wg, until stop
// is closed or a write fails.
func trickle(wg *sync.WaitGroup, conn net.Conn, b string, stop <-chan struct{}) {
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := io.WriteString(conn, b); err != nil {
				return
			}
		}
	})
}

// TestDeclaredLargeBodiesReserveNothing: batch creates that declare a 32
// MiB body and send one byte, or trickle a byte every 100 ms, reserve no
// memory for what they declared (the process allocates less than a MiB
// for each), are answered 408 or closed once they fall behind the floor
// on a body's pace, whatever they declared; /healthz and another tenant's
// create answer meanwhile. It runs alone: it reads the process's
// allocation counter.
func TestDeclaredLargeBodiesReserveNothing(t *testing.T) {
	const conns = 20
	e := newEnv(t, Config{})
	acme, globex := e.token(t, "acme", false), e.token(t, "globex", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.putTopic(t, globex, "orders", obj{"callback_url": hook})
	head := "POST /v1/topics/orders/jobs/batch HTTP/1.1\r\nHost: k\r\nAuthorization: " + acme +
		"\r\nContent-Type: application/json\r\nContent-Length: 33554432\r\n\r\n"

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	open := make([]net.Conn, conns)
	stop := make(chan struct{})
	var trickling sync.WaitGroup
	defer func() { close(stop); trickling.Wait() }()
	for i := range open {
		open[i] = e.rawRequest(t, head, "{")
		if i%2 == 1 {
			trickle(&trickling, open[i], " ", stop)
		}
	}
	// meanwhile the server answers others
	if res := e.do(t, "GET", "/healthz", "", nil, offSpec()); res.Status != http.StatusOK {
		t.Errorf("/healthz: %d %s", res.Status, res.Body)
	}
	if res := e.do(t, "POST", "/v1/topics/orders/jobs", globex, obj{"delay": "1h", "payload": obj{"n": 1}}); res.Status != http.StatusCreated {
		t.Errorf("another tenant's create: %d %.200s", res.Status, res.Body)
	}

	deadline, stillOpen := time.Now().Add(30*time.Second), 0
	for i, c := range open {
		status, err := closedWithin(c, time.Until(deadline))
		if err != nil {
			stillOpen++
			continue
		}
		if status != "" && status != "HTTP/1.1 408 Request Timeout" {
			t.Errorf("connection %d answered %q, want 408 or nothing", i, status)
		}
	}
	if stillOpen > 0 {
		t.Errorf("%d of %d connections that declared 32 MiB and sent a byte or a trickle are still open after 30s", stillOpen, conns)
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d connections that declared 32 MiB: %.1f MiB allocated meanwhile", conns, float64(grew)/(1<<20))
	if grew > conns<<20 {
		t.Errorf("%d connections that declared 32 MiB and sent nearly nothing made the server allocate %.1f MiB; want under 1 MiB each", conns, float64(grew)/(1<<20))
	}
}

// TestBodyBudgetSheds: while one body holds the server's budget of body
// bytes in flight (MaxBodyInflight), a body that would need more waits,
// then is answered 503 with Retry-After, naming the setting; a small
// create and /healthz are answered as usual; once the large body is gone,
// the body that was refused is taken.
func TestBodyBudgetSheds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxBodyInflight: 1 << 20})
	acme, globex := e.token(t, "acme", false), e.token(t, "globex", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.putTopic(t, globex, "orders", obj{"callback_url": hook})

	// a batch of 4 MiB declared: 700 KB at once (its buffer takes the whole
	// budget), then 8 KB every 100 ms, above the floor, until it is closed
	big := e.rawRequest(t, "POST /v1/topics/orders/jobs/batch HTTP/1.1\r\nHost: k\r\nAuthorization: "+acme+
		"\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n", `{"jobs": [{"delay": "1h", "payload": "`+strings.Repeat("x", 700_000))
	stop := make(chan struct{})
	var trickling sync.WaitGroup
	trickle(&trickling, big, strings.Repeat("x", 8_000), stop)
	stopTrickling := sync.OnceFunc(func() { close(stop); trickling.Wait() })
	defer stopTrickling()

	mid := obj{"delay": "1h", "payload": strings.Repeat("y", 20_000)} // more than a body holds without the budget
	var refused result
	for deadline := time.Now().Add(20 * time.Second); ; {
		refused = e.do(t, "POST", "/v1/topics/orders/jobs", globex, mid)
		if refused.Status == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 20 KB create while the budget is held: %d %.200s, want 503 within 20s", refused.Status, refused.Body)
		}
	}
	p := wantProblem(t, refused, http.StatusServiceUnavailable)
	wantFields(t, p, "body")
	if refused.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "KAIROS_MAX_BODY_INFLIGHT") {
		t.Errorf("503 with Retry-After %q and detail %q; want a Retry-After and the setting named", refused.Header.Get("Retry-After"), p.Detail)
	}
	if res := e.do(t, "GET", "/healthz", "", nil, offSpec()); res.Status != http.StatusOK {
		t.Errorf("/healthz while the budget is held: %d", res.Status)
	}
	if res := e.do(t, "POST", "/v1/topics/orders/jobs", globex, obj{"delay": "1h", "payload": "small"}); res.Status != http.StatusCreated {
		t.Errorf("a small create while the budget is held: %d %.200s", res.Status, res.Body)
	}

	stopTrickling()
	big.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		res := e.do(t, "POST", "/v1/topics/orders/jobs", globex, mid)
		if res.Status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 20 KB create once the large body is gone: %d %.200s, want 201 within 20s", res.Status, res.Body)
		}
	}
}
