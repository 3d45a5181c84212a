package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestOccurrencesCountedInStatsAndMetrics runs kairos on a real
// redis-server with a schedule firing 5 times, every second: its 2nd
// occurrence is delivered on a retry, its 3rd fails both its attempts and
// goes dead. /v1/stats (counters in Redis) and /metrics (this process's
// counters) both count 5 fired, 4 delivered, 1 dead; a plain job of the
// topic is no occurrence.
func TestOccurrencesCountedInStatsAndMetrics(t *testing.T) {
	skipShort(t)
	var mu sync.Mutex
	rank := map[string]int{} // an occurrence's job id -> its rank by first call
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Kairos-Schedule-Id") == "" {
			return // the plain job
		}
		mu.Lock()
		id := r.Header.Get("Kairos-Job-Id")
		n, ok := rank[id]
		if !ok {
			n = len(rank) + 1
			rank[id] = n
		}
		mu.Unlock()
		if n == 3 || (n == 2 && r.Header.Get("Kairos-Attempt") == "1") {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rcv.Close)
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	ti := &testInstance{url: in.URL}
	if ti.token, err = in.Authn.Mint("acme", false, time.Hour); err != nil {
		t.Fatal(err)
	}

	ti.call(t, "PUT", "/v1/topics/ticks", `{"callback_url": "`+rcv.URL+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/ticks/jobs", `{"delay": "0s", "payload": 1}`, http.StatusCreated)
	start := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Millisecond)
	ti.call(t, "PUT", "/v1/topics/ticks/schedules/tick", fmt.Sprintf(
		`{"every": "1s", "start_at": %q, "end_at": %q, "max_attempts": 2, "backoff": {"initial": "10ms", "max": "10ms"}}`,
		start.Format(time.RFC3339Nano), start.Add(4500*time.Millisecond).Format(time.RFC3339Nano)), http.StatusCreated)

	want := client.Occurrences{Fired: 5, Delivered: 4, Dead: 1}
	wantMetrics := []string{
		`kairos_occurrences_fired_total{topic="acme/ticks"} 5`,
		`kairos_occurrences_delivered_total{topic="acme/ticks"} 4`,
		`kairos_occurrences_dead_total{topic="acme/ticks"} 1`,
		`kairos_jobs_delivered_total{topic="acme/ticks"} 5`, // the plain job too
	}
	var got client.Occurrences
	var counts client.Counts
	testwait.UntilNil(t, 30*time.Second, func() error {
		var st client.Stats
		if err := json.Unmarshal([]byte(ti.call(t, "GET", "/v1/stats", "", http.StatusOK)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Topics) == 1 {
			got, counts = st.Topics[0].Occurrences, st.Topics[0].Counts
		}
		metrics := ti.call(t, "GET", "/metrics", "", http.StatusOK)
		var missing []string
		for _, l := range wantMetrics {
			if !strings.Contains(metrics, "\n"+l+"\n") {
				missing = append(missing, l)
			}
		}
		if got != want || len(missing) > 0 {
			return fmt.Errorf("stats count occurrences %+v, want %+v; /metrics lacks %q", got, want, missing)
		}
		return nil
	}, "every occurrence counted in /v1/stats and /metrics")
	// every occurrence ended: 4 delivered and the plain job, 1 dead; nothing else
	if wantCounts := (client.Counts{Delivered: 5, Dead: 1}); counts != wantCounts {
		t.Errorf("counts %+v, want %+v", counts, wantCounts)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rank) != 5 {
		t.Errorf("the receiver saw %d occurrences, want 5: %v", len(rank), rank)
	}
}
