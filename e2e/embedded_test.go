package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testproc"
)

// TestEmbeddedServeDelivers runs the README's first command as a new user
// does: `kairos serve --allow-private-urls` (the flag the banner names for a
// receiver on this machine) without KAIROS_REDIS_URL (the embedded Redis)
// and without KAIROS_AUTH_SECRET (a generated one, an admin token printed).
// With that token it registers a topic and creates jobs, single and batch,
// due now and later, one with a payload long enough to be stored in pieces;
// each is delivered once and reads back as delivered.
func TestEmbeddedServeDelivers(t *testing.T) {
	t.Parallel()
	p := testproc.StartArgs(t, "embedded", []string{"--allow-private-urls"}, "KAIROS_REDIS_URL=", "KAIROS_AUTH_SECRET=",
		"KAIROS_ADDR=127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS=")
	token := p.WaitMatch(t, regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), 20*time.Second)
	base := p.URL(t)
	call := func(method, path string, body any, want int) []byte {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, out.String())
		}
		return out.Bytes()
	}
	rcv := newReceiver(t, nil)
	call("PUT", "/v1/topics/demo", map[string]any{"callback_url": rcv.URL}, http.StatusCreated)
	long := `{"note":"` + strings.Repeat("a long payload, stored in 64-byte pieces; ", 5) + `"}`
	call("POST", "/v1/topics/demo/jobs", map[string]any{"id": "single", "delay": "500ms", "payload": json.RawMessage(long)}, http.StatusCreated)
	call("POST", "/v1/topics/demo/jobs/batch", map[string]any{"jobs": []map[string]any{
		{"id": "now", "delay": "0s", "payload": 1},
		{"id": "later", "delay": "1s", "payload": 2},
	}}, http.StatusCreated)
	rcv.waitHits(t, 3, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // room for a duplicate to show
	jobs := rcv.byJob()
	for _, id := range []string{"single", "now", "later"} {
		if len(jobs[id]) != 1 {
			t.Fatalf("job %s delivered %d times, want once", id, len(jobs[id]))
		}
	}
	if got := string(jobs["single"][0].Body); got != long {
		t.Fatalf("long payload arrived as %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v jobView
		json.Unmarshal(call("GET", "/v1/topics/demo/jobs/single", nil, http.StatusOK), &v)
		if v.State == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job single is %q, want delivered", v.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
