package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestFreshInstanceCountsNoRedisErrors starts kairos on a real
// redis-server, has it register topics and deliver jobs, and reads
// /metrics: kairos_redis_errors_total must be 0, because nothing failed
// (the handshake commands a Redis 7.0 refuses and go-redis ignores are no
// failures).
func TestFreshInstanceCountsNoRedisErrors(t *testing.T) {
	call, hits, rcvURL := startTestInstance(t)
	countsNoRedisErrors(t, call, hits, rcvURL)
}

// TestEmbeddedInstanceCountsNoRedisErrors is the same on the embedded
// Redis, which has no FUNCTION command: the FUNCTION LOAD that finds this
// out, and falls back to EVALSHA, is no error.
func TestEmbeddedInstanceCountsNoRedisErrors(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{})
	call := func(method, path, body string, want int) string {
		t.Helper()
		return ti.call(t, method, path, body, want)
	}
	countsNoRedisErrors(t, call, ti.hits, ti.rcvURL)
}

// countsNoRedisErrors has a kairos register topics and deliver jobs, then
// reads kairos_redis_errors_total from /metrics: it must be 0.
func countsNoRedisErrors(t *testing.T, call func(method, path, body string, want int) string, hits *atomic.Int64, rcvURL string) {
	t.Helper()
	for _, topic := range []string{"a", "b", "c"} {
		call("PUT", "/v1/topics/"+topic, `{"callback_url": "`+rcvURL+`"}`, http.StatusCreated)
		call("POST", "/v1/topics/"+topic+"/jobs", `{"delay": "0s", "payload": 1}`, http.StatusCreated)
		call("POST", "/v1/topics/"+topic+"/jobs", `{"delay": "100ms", "payload": 2}`, http.StatusCreated)
	}
	waitHits(t, hits, 6, 20*time.Second)
	call("GET", "/v1/stats", "", http.StatusOK)
	metrics := call("GET", "/metrics", "", http.StatusOK)
	if !strings.Contains(metrics, "\nkairos_redis_errors_total 0\n") {
		for _, l := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(l, "kairos_redis_errors_total") {
				t.Fatalf("a fresh instance doing normal work reports %q, want 0", l)
			}
		}
		t.Fatal("no kairos_redis_errors_total in /metrics")
	}
}

// TestPastRunAtIsNotLate: a job created with a run_at an hour ago fires at
// once, and its lateness is counted from its creation, not from the run_at
// (in /v1/stats and in /metrics).
func TestPastRunAtIsNotLate(t *testing.T) {
	call, hits, rcvURL := startTestInstance(t)
	call("PUT", "/v1/topics/past", `{"callback_url": "`+rcvURL+`"}`, http.StatusCreated)
	runAt := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	call("POST", "/v1/topics/past/jobs", `{"run_at": "`+runAt+`", "payload": 1}`, http.StatusCreated)
	var st struct {
		Topics []struct {
			Recent struct {
				Lateness struct {
					Samples int64   `json:"samples"`
					Max     float64 `json:"max_ms"`
				} `json:"lateness"`
			} `json:"recent"`
		} `json:"topics"`
	}
	testwait.UntilNil(t, 20*time.Second, func() error {
		if err := json.Unmarshal([]byte(call("GET", "/v1/stats", "", http.StatusOK)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Topics) != 1 || st.Topics[0].Recent.Lateness.Samples != 1 {
			return fmt.Errorf("%d callbacks, stats %+v", hits.Load(), st.Topics)
		}
		return nil
	}, "the job's lateness sampled in /v1/stats")
	if max := st.Topics[0].Recent.Lateness.Max; max > 60_000 {
		t.Fatalf("lateness max %v ms: the hour before the job existed was counted", max)
	}
	for _, l := range strings.Split(call("GET", "/metrics", "", http.StatusOK), "\n") {
		if rest, ok := strings.CutPrefix(l, `kairos_lateness_seconds_sum{topic="acme/past"} `); ok {
			if v, err := strconv.ParseFloat(rest, 64); err != nil || v > 60 {
				t.Fatalf("kairos_lateness_seconds_sum %q: the hour before the job existed was counted", rest)
			}
			return
		}
	}
	t.Fatal("no kairos_lateness_seconds_sum for acme/past in /metrics")
}

// startTestInstance starts kairos in this process on a real redis-server,
// with a receiver on loopback, and returns a caller of its API acting for
// tenant acme (it also reads /metrics), the receiver's hit count and URL.
func startTestInstance(t *testing.T) (call func(method, path, body string, want int) string, hits *atomic.Int64, rcvURL string) {
	t.Helper()
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	call = func(method, path, body string, want int) string {
		t.Helper()
		return ti.call(t, method, path, body, want)
	}
	return call, ti.hits, ti.rcvURL
}

// testInstance is kairos started in this process for a test, with a
// receiver on loopback.
type testInstance struct {
	in         *Instance     // nil for a kairos in a process of its own
	hits       *atomic.Int64 // the receiver's
	rcvURL     string
	url, token string // the API's, and a token of tenant acme
}

// startTestInstanceOn is startTestInstance with the Redis env names
// (KAIROS_REDIS_URL and any other KAIROS_* variables).
func startTestInstanceOn(t *testing.T, env map[string]string) *testInstance {
	t.Helper()
	ti := &testInstance{hits: new(atomic.Int64)}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ti.hits.Add(1) }))
	t.Cleanup(rcv.Close)
	ti.rcvURL = rcv.URL
	in, err := startWith(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	ti.in, ti.url = in, in.URL
	if ti.token, err = in.Authn.Mint("acme", false, time.Hour); err != nil {
		t.Fatal(err)
	}
	return ti
}

// do calls the API as tenant acme and returns the status and body. It may
// be called from any goroutine.
func (ti *testInstance) do(method, path, body string) (int, string, error) {
	req, _ := http.NewRequest(method, ti.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ti.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// call is do from the test's goroutine, failing the test unless the
// status is want.
func (ti *testInstance) call(t *testing.T, method, path, body string, want int) string {
	t.Helper()
	status, b, err := ti.do(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if status != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, status, want, b)
	}
	return b
}

// startWith starts kairos in this process as the tests do (loopback
// listener, loopback callbacks allowed, a short grace, a fixed auth
// secret), with env added to the environment.
func startWith(env map[string]string) (*Instance, error) {
	all := map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef0123"}
	maps.Copy(all, env)
	cfg, err := ParseConfig([]string{"--addr", "127.0.0.1:0", "--grace", "1s", "--allow-private-urls"}, fakeEnv(all), io.Discard)
	if err != nil {
		return nil, err
	}
	var logTo io.Writer = io.Discard
	if os.Getenv("KAIROS_TEST_LOG") != "" { // to see why a test failed
		logTo = os.Stderr
	}
	return Start(context.Background(), cfg, slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// TestBusyPortNamesTheSetting: a listen address taken by another process
// fails the start with an error that says so and names the setting that
// picks the address, for the API's listener and for /metrics' own.
func TestBusyPortNamesTheSetting(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	for _, tc := range []struct {
		name, setting string
		args          []string
		want          string
	}{
		{"api", "--addr or KAIROS_ADDR", []string{"--addr", addr}, "listen on " + addr + ": "},
		{"metrics", "--metrics-addr or KAIROS_METRICS_ADDR", []string{"--addr", "127.0.0.1:0", "--metrics-addr", addr}, "/metrics: listen on " + addr + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig(append(tc.args, "--grace", "1s"), fakeEnv(map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef0123"}), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			in, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err == nil {
				in.Stop()
				t.Fatalf("started on a busy address %s", addr)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) || !strings.Contains(msg, "address already in use") ||
				!strings.HasSuffix(msg, "another process listens there: stop it, or choose another address with "+tc.setting) {
				t.Errorf("error %q: want it to start %q, say the address is in use and name %s", msg, tc.want, tc.setting)
			}
		})
	}
}
