package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// GET /v1/stats counts a topic's schedule occurrences fired, delivered and
// dead beside its jobs by state, in the shape openapi.yaml gives them; a
// plain job is no occurrence.
func TestStatsCountOccurrences(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/orders/schedules/tick", acme, obj{"every": "1s"}), http.StatusCreated)
	e.createJob(t, acme, "orders", obj{"id": "plain", "delay": "0s"})
	e.deliveredJob(t, "acme", "orders", "plain")
	first := t0.Add(time.Second) // an interval counts from the creation
	e.clock.Add(time.Second)
	e.deliveredJob(t, "acme", "orders", kairos.OccurrenceID("tick", first))
	e.clock.Add(time.Second)
	e.deadJob(t, "acme", "orders", kairos.OccurrenceID("tick", first.Add(time.Second)))

	stats := want[statsResponse](t, e.do(t, "GET", "/v1/stats", acme, nil), http.StatusOK)
	if len(stats.Topics) != 1 {
		t.Fatalf("stats of %d topics, want 1: %+v", len(stats.Topics), stats)
	}
	if d := cmp.Diff(occurrenceStats{Fired: 2, Delivered: 1, Dead: 1}, stats.Topics[0].Occurrences); d != "" {
		t.Errorf("occurrences (-want +got):\n%s", d)
	}
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateDelivered: 2, kairos.StateDead: 1, kairos.StateScheduled: 1})
}
