package callback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestWorkerReportsBreakerMoves: the answers that move a topic's circuit
// breaker (the store's BreakerAnswer says Changed) reach OnBreaker, once each
// and with the state moved to; the others do not.
func TestWorkerReportsBreakerMoves(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Kairos-Job-Id") == "ok" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	st := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", CallbackURL: srv.URL, BreakerFailures: 2, BreakerCooldown: time.Second}.WithDefaults())
	var mu sync.Mutex
	fails := 0
	st.breaker = func(delivered bool) kairos.Breaker { // opens at the second failure in a row
		mu.Lock()
		defer mu.Unlock()
		if delivered {
			was := fails
			fails = 0
			return kairos.Breaker{State: "closed", Changed: was >= 2}
		}
		fails++
		if fails >= 2 {
			return kairos.Breaker{State: "open", Changed: fails == 2}
		}
		return kairos.Breaker{State: "closed"}
	}
	st.want = 4
	type move struct{ tenant, topic, state string }
	moves := make(chan move, 10)
	w := NewWorker(st, WorkerConfig{AllowPrivate: true, Grace: 5 * time.Second, Wait: time.Second,
		OnBreaker: func(tenant, topic string, b kairos.Breaker) { moves <- move{tenant, topic, b.State} }})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	// One at a time, so that the answers reach the breaker in this order.
	for _, id := range []string{"f1", "f2", "f3", "ok"} {
		before := len(st.outcomes())
		now := time.Now()
		st.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: id}, UID: "u" + id, Attempts: 1, MaxAttempts: 1,
			Method: http.MethodPost, ContentType: "application/json", Payload: []byte(`{}`), RunAt: now}, now)
		waitFor(t, "job "+id+"'s outcome", func() bool { return len(st.outcomes()) > before })
	}
	cancel()
	wg.Wait()
	close(moves)
	var got []move
	for m := range moves {
		got = append(got, m)
	}
	want := []move{{"t", "orders", "open"}, {"t", "orders", "closed"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("breaker moves %v, want %v", got, want)
	}
}
