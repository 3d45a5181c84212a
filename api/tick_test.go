package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// POST /v1/tick runs the process's tick for the asked length (default
// 55s), for admins only, and answers its summary as openapi.yaml says.
func TestTickAdminOnly(t *testing.T) {
	t.Parallel()
	var asked []time.Duration
	next := time.Date(2026, 11, 21, 10, 31, 10, 0, time.UTC)
	e := newEnv(t, Config{Tick: func(ctx context.Context, d time.Duration) (kairos.TickSummary, error) {
		asked = append(asked, d)
		return kairos.TickSummary{Delivered: 3, Failed: 1, NextDue: &next, Shards: 16, Seconds: 0.5}, nil
	}})
	wantProblem(t, e.do(t, "POST", "/v1/tick", e.token(t, "acme", false), nil), http.StatusForbidden)
	admin := e.token(t, "ops", true)
	got := want[kairos.TickSummary](t, e.do(t, "POST", "/v1/tick", admin, nil), http.StatusOK)
	if got.Delivered != 3 || got.Failed != 1 || got.NextDue == nil || !got.NextDue.Equal(next) {
		t.Errorf("summary %+v", got)
	}
	want[kairos.TickSummary](t, e.do(t, "POST", "/v1/tick", admin, map[string]string{"for": "3s"}), http.StatusOK)
	wantProblem(t, e.do(t, "POST", "/v1/tick", admin, map[string]string{"for": "1h"}), http.StatusBadRequest)
	wantProblem(t, e.do(t, "POST", "/v1/tick", admin, map[string]string{"for": "soon"}), http.StatusBadRequest)
	if len(asked) != 2 || asked[0] != 55*time.Second || asked[1] != 3*time.Second {
		t.Errorf("ticks asked for %v, want [55s 3s]", asked)
	}
	wantProblem(t, newEnv(t, Config{}).do(t, "POST", "/v1/tick", admin, nil), http.StatusNotFound)
}
