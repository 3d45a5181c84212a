package web

// The kairos side of the browser test: a `kairos serve` child process and
// a callback receiver.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

const testSecret = "web-browser-test-secret-0123456789"

// startKairos runs `kairos serve` against the package's redis-server on a
// free loopback port and waits for /healthz. It returns the base URL.
func startKairos(t *testing.T) string {
	t.Helper()
	p := testproc.Start(t, "kairos serve", "KAIROS_REDIS_URL="+testredis.URL(t), "KAIROS_AUTH_SECRET="+testSecret,
		"KAIROS_PREFIX="+testredis.Prefix(t), "KAIROS_ADDR=127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS=1",
		"KAIROS_LOCK_TTL=1s", "KAIROS_LEASE_GRACE=1s", "KAIROS_GRACE=2s")
	base := p.URL(t)
	testwait.UntilNil(t, 20*time.Second, func() error {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz answers %d", res.StatusCode)
		}
		return nil
	}, "kairos serve answering /healthz")
	return base
}

// receiver is the callback target: /ok answers 200, /flaky 500 until
// healed, /down always 503.
type receiver struct {
	*httptest.Server
	healthy atomic.Bool
	mu      sync.Mutex
	hits    map[string][]int // job id -> statuses answered
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{hits: map[string][]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		status := http.StatusOK
		switch {
		case req.URL.Path == "/flaky" && !r.healthy.Load():
			status = http.StatusInternalServerError
		case req.URL.Path == "/down":
			status = http.StatusServiceUnavailable
		}
		r.mu.Lock()
		id := req.Header.Get("Kairos-Job-Id")
		r.hits[id] = append(r.hits[id], status)
		r.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d}`, status)
	}))
	t.Cleanup(r.Close)
	return r
}

// apiCall calls the REST API directly, for seeding data the test is not about.
func apiCall(t *testing.T, base, token, method, path string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return b
}

// waitJobState polls a job (path: /v1/topics/{topic}/jobs/{id}, with any
// query) through the API until it is in state want.
func waitJobState(t *testing.T, base, token, path, want string, within time.Duration) {
	t.Helper()
	testwait.UntilNil(t, within, func() error {
		var j struct{ State string }
		json.Unmarshal(apiCall(t, base, token, "GET", path, nil), &j)
		if j.State != want {
			return fmt.Errorf("it is %q", j.State)
		}
		return nil
	}, path+" "+want)
}

// artifactDir is $KAIROS_ARTIFACTS or artifacts/web under the repository root.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("KAIROS_ARTIFACTS")
	if dir == "" {
		root, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "artifacts")
	}
	dir = filepath.Join(dir, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
