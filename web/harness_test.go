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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
)

const testSecret = "web-browser-test-secret-0123456789"

// kairosBinary builds cmd/kairos once.
var kairosBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kairos-web-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kairos")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kairos-sh/kairos/cmd/kairos").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/kairos: %w\n%s", err, out)
	}
	return bin, nil
})

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startKairos runs `kairos serve` against the package's redis-server on a
// free loopback port and waits for /healthz. It returns the base URL.
func startKairos(t *testing.T) string {
	t.Helper()
	bin, err := kairosBinary()
	if err != nil {
		t.Fatal(err)
	}
	prefix := testredis.Prefix(t)
	for range 3 { // a free port can be taken before kairos listens on it
		port, err := testredis.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		out := &lockedBuffer{}
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "KAIROS_REDIS_URL="+testredis.URL(t), "KAIROS_AUTH_SECRET="+testSecret,
			"KAIROS_PREFIX="+prefix, "KAIROS_ADDR="+addr, "KAIROS_ALLOW_PRIVATE_URLS=1",
			"KAIROS_LOCK_TTL=1s", "KAIROS_LEASE_GRACE=1s", "KAIROS_GRACE=2s")
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			select {
			case <-done:
			default:
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-done
				}
			}
			if t.Failed() {
				t.Logf("--- kairos serve output:\n%s", out.String())
			}
		})
		if waitHealthy(t, "http://"+addr, done, out) {
			return "http://" + addr
		}
	}
	t.Fatal("kairos serve found no free port in 3 tries")
	return ""
}

// waitHealthy waits for /healthz; false means the port was taken.
func waitHealthy(t *testing.T, base string, done <-chan struct{}, out *lockedBuffer) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-done:
			if strings.Contains(out.String(), "address already in use") {
				return false
			}
			t.Fatalf("kairos serve exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kairos serve did not answer /healthz within 20s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
