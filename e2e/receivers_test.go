package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testproc"
)

// The example receivers in examples/receivers, one per language. Each
// starts with the tenant's secrets in KAIROS_SECRET_CURRENT and
// KAIROS_SECRET_NEXT, listens on a free loopback port, and says where.
var exampleReceivers = []struct {
	lang  string
	tools []string
	start func(t *testing.T, env []string) *exec.Cmd
}{
	{"go", nil, func(t *testing.T, env []string) *exec.Cmd {
		bin := filepath.Join(t.TempDir(), "receiver")
		build := exec.Command("go", "build", "-o", bin, "github.com/kairos-sh/kairos/examples/receivers/go")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build examples/receivers/go: %v\n%s", err, out)
		}
		return command(env, "", bin, "--port", "0")
	}},
	{"node", []string{"node", "npm"}, func(t *testing.T, env []string) *exec.Cmd {
		// A copy, so that node_modules never lands in the source tree; npm ci
		// installs exactly the lockfile, from npm's cache when it has it.
		dir := t.TempDir()
		for _, f := range []string{"package.json", "package-lock.json", "receiver.js"} {
			b, err := os.ReadFile(filepath.Join("..", "examples", "receivers", "node", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ci := command(nil, dir, "npm", "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund")
		if out, err := ci.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in a copy of examples/receivers/node: %v\n%s", err, out)
		}
		return command(env, dir, "node", "receiver.js", "--port", "0")
	}},
	{"python", []string{"python3"}, func(t *testing.T, env []string) *exec.Cmd {
		src, err := filepath.Abs(filepath.Join("..", "examples", "receivers", "python", "receiver.py"))
		if err != nil {
			t.Fatal(err)
		}
		return command(append(env, "PYTHONDONTWRITEBYTECODE=1"), "", "python3", src, "--port", "0")
	}},
}

// command is exec.Command in dir with env added to this process's.
func command(env []string, dir, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env, c.Dir = append(os.Environ(), env...), dir
	return c
}

// needTools skips the test when a tool is missing, except under CI=true,
// where a missing tool fails it: scripts/test-deps.sh installs them.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err == nil {
			continue
		}
		msg := tool + " not found on PATH; make test-deps installs Debian's nodejs, npm and python3"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: a missing tool fails the test)")
		}
		t.Skip(msg + "; skipping this receiver")
	}
}

// TestExampleReceiversVerifyCallbacks runs each example receiver against
// real callbacks from kairos, whose payload keeps the client's spacing and
// escapes (a receiver that re-serialised the JSON would fail them), then
// sends it requests of its own: signed with the current or the next secret
// (accepted), a tampered body and a stale timestamp (refused).
func TestExampleReceiversVerifyCallbacks(t *testing.T) {
	t.Parallel()
	for _, r := range exampleReceivers {
		t.Run(r.lang, func(t *testing.T) {
			t.Parallel()
			needTools(t, r.tools...)
			e := startEngine(t, engineOpts{allowPrivate: true})
			keys, err := e.c.GetSigningKeys(context.Background())
			if err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			p := testproc.StartCmd(t, r.lang+" receiver", r.start(t, []string{
				"KAIROS_SECRET_CURRENT=" + keys.Current, "KAIROS_SECRET_NEXT=" + keys.Next}))
			base := strings.TrimPrefix(p.WaitMatch(t, regexp.MustCompile(`listening on http://127\.0\.0\.1:\d+`), 20*time.Second), "listening on ")
			t.Logf("%s receiver up at %s after %v", r.lang, base, time.Since(start).Round(time.Millisecond))
			url := base + "/hooks/orders"

			e.putTopic("orders", url)
			ids := []string{"order-42", "order-43"}
			// The client sends the payload byte for byte.
			const payload = `{ "order": 42,  "note": "caf\u00e9 \u2615", "total": 1.50 }`
			for _, id := range ids {
				e.create("orders", client.JobRequest{ID: id, Payload: json.RawMessage(payload)})
			}
			for _, id := range ids {
				e.waitState("orders", id, "delivered", 10*time.Second)
				line := `accepted webhook-id=\S+ job=` + id + ` attempt=1 bytes=` + strconv.Itoa(len(payload))
				p.WaitMatch(t, regexp.MustCompile(line), 5*time.Second)
			}

			raw := []byte(`{ "order": 7,  "note": "caf\u00e9", "total": 1.50 }`)
			now := time.Now()
			for _, tc := range []struct {
				name         string
				secret       string
				sent, signed []byte
				at           time.Time
				want         int
			}{
				{"raw body signed now", keys.Current, raw, raw, now, http.StatusNoContent},
				{"signed with the next secret", keys.Next, raw, raw, now, http.StatusNoContent},
				{"tampered body", keys.Current, bytes.Replace(raw, []byte("7"), []byte("8"), 1), raw, now, http.StatusUnauthorized},
				{"stale timestamp", keys.Current, raw, raw, now.Add(-6 * time.Minute), http.StatusUnauthorized},
			} {
				req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(tc.sent))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Kairos-Job-Id", "direct")
				req.Header.Set("Kairos-Attempt", "1")
				sig := callback.Signature{MsgID: "msg_direct", DeliveryID: "msg_direct.1", URL: url, Timestamp: tc.at}
				if err := callback.Sign(req.Header, tc.secret, sig, tc.signed); err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("%s: answered %d, want %d", tc.name, resp.StatusCode, tc.want)
				}
			}
		})
	}
}
