package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestSilentAndTricklingClientsAreCutOff opens raw loopback connections
// that declare a body and then send nothing, or send it one byte every two
// seconds, on routes with and without a body of their own, and a request
// whose headers never end: kairos (KAIROS_READ_TIMEOUT=1s) must answer or
// close each within a bounded time. Without read and write timeouts every
// one of them stays open.
func TestSilentAndTricklingClientsAreCutOff(t *testing.T) {
	t.Parallel()
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(),
		"KAIROS_READ_TIMEOUT": "1s", "KAIROS_WRITE_TIMEOUT": "2s"})
	ti.call(t, "PUT", "/v1/topics/slow", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	addr := strings.TrimPrefix(ti.url, "http://")
	auth := "Authorization: Bearer " + ti.token + "\r\n"
	const within = 6 * time.Second // the read timeout, and room for a loaded machine
	tests := []struct {
		name    string
		request string // sent at once
		trickle bool   // then one byte every two seconds, else nothing
	}{
		{name: "silent body on /healthz", request: "GET /healthz HTTP/1.1\r\nHost: k\r\nContent-Length: 1000\r\n\r\n"},
		{name: "silent body on the admin page", request: "GET / HTTP/1.1\r\nHost: k\r\nContent-Length: 1000\r\n\r\n"},
		{name: "silent body without a token", request: "POST /v1/topics/slow/jobs HTTP/1.1\r\nHost: k\r\nContent-Length: 1000\r\n\r\n"},
		{name: "silent body of a create", request: "POST /v1/topics/slow/jobs HTTP/1.1\r\nHost: k\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"},
		{name: "trickled body of a create", request: "POST /v1/topics/slow/jobs HTTP/1.1\r\nHost: k\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n", trickle: true},
		{name: "trickled chunked body", request: "PUT /v1/topics/slow HTTP/1.1\r\nHost: k\r\n" + auth + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", trickle: true},
		{name: "headers that never end", request: "GET /healthz HTTP/1.1\r\nHost: k\r\n", trickle: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if tt.trickle {
				go func() {
					for range int(within/(2*time.Second)) + 2 { // bounded: a byte every 2s for longer than the test waits
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Second):
						}
						if _, err := conn.Write([]byte("1")); err != nil {
							return
						}
					}
				}()
			}
			conn.SetReadDeadline(start.Add(within))
			status, err := readUntilClosed(conn)
			if err != nil {
				t.Fatalf("after %s the connection is still open (answer so far: %q): %v", time.Since(start).Round(time.Millisecond), status, err)
			}
			t.Logf("closed after %s; answer: %q", time.Since(start).Round(time.Millisecond), status)
		})
	}
}

// readUntilClosed reads conn until the server closes it and returns the
// status line of the answer, if one came. Its error is nil when the
// server closed the connection (EOF or a reset), else the read's.
func readUntilClosed(conn net.Conn) (string, error) {
	br := bufio.NewReader(conn)
	status, _ := br.ReadString('\n')
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return strings.TrimSpace(status), nil
	case errors.As(err, &ne) && ne.Timeout():
		return strings.TrimSpace(status), fmt.Errorf("read: %w", err)
	}
	return strings.TrimSpace(status), nil // reset by the server: closed too
}

// TestLargeBodyGetsTimeToArrive sends a batch of about 200 KB at about 100
// KB a second to a kairos whose read timeout is 1s: a body that keeps
// above the floor on its pace (api.BodyFloor) is read however long it
// takes, so the batch arrives and is created, where the read timeout alone
// would have cut it off after a second.
func TestLargeBodyGetsTimeToArrive(t *testing.T) {
	t.Parallel()
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(),
		"KAIROS_READ_TIMEOUT": "1s", "KAIROS_WRITE_TIMEOUT": "2s"})
	ti.call(t, "PUT", "/v1/topics/big", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	var b strings.Builder
	b.WriteString(`{"jobs": [`)
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"delay": "1h", "payload": "%s"}`, strings.Repeat("x", 2000))
	}
	b.WriteString("]}")
	body := b.String()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ti.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/topics/big/jobs/batch HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", ti.token, len(body))
	for i := 0; i < len(body); i += 10_000 { // 10 KB every 100 ms
		time.Sleep(100 * time.Millisecond) // the point: a slow sender's pace
		if _, err := io.WriteString(conn, body[i:min(i+10_000, len(body))]); err != nil {
			t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
		}
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := readUntilClosed(conn)
	if err != nil || status != "HTTP/1.1 201 Created" {
		t.Fatalf("a %d-byte batch sent over %s: %q, %v; want 201 Created", len(body), time.Since(start).Round(time.Millisecond), status, err)
	}
}

// TestDeclaredBodyOverLimitAnsweredAtOnce: a request that declares a body
// larger than its route takes is answered 413 before any of it is read,
// not after the read timeout.
func TestDeclaredBodyOverLimitAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_READ_TIMEOUT": "5s"})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ti.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "PUT /v1/topics/big HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n", ti.token)
	conn.SetReadDeadline(start.Add(4 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || strings.TrimSpace(status) != "HTTP/1.1 413 Request Entity Too Large" {
		t.Fatalf("after %s: %q, %v; want 413 at once", time.Since(start).Round(time.Millisecond), status, err)
	}
}
