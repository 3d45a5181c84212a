package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// A receiver that answers 410 Gone asks, in Standard Webhooks' words, not to
// be called again: the job is dead after that one attempt, however many
// attempts it had left, its log says why, and kairos_gone_total counts it.
func TestGoneReceiverStopsRetriesAtOnce(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, func(int, hit) int { return http.StatusGone })
	putTopic(t, store, "gone", rcv.URL, 2*time.Second)
	p := startKairos(t, "A", prefix)
	url := p.URL(t)
	p.WaitLog(t, "consuming topic", 10*time.Second)
	key := kairos.JobKey{Tenant: "acme", Topic: "gone", ID: "unsubscribed"}
	// A 1ms backoff: were the 410 retried, the retries would come at once.
	if _, err := store.Enqueue(context.Background(), kairos.Job{JobKey: key, RunAt: store.Now(), MaxAttempts: 5,
		BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond}); err != nil {
		t.Fatal(err)
	}

	var j kairos.Job
	testwait.UntilNil(t, 15*time.Second, func() error {
		var err error
		if j, err = store.GetJob(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if j.State != kairos.StateDead {
			return fmt.Errorf("job %s with %d attempts, want dead", j.State, j.Attempts)
		}
		return nil
	}, "the job dead")
	if j.Attempts != 1 || len(j.Log) != 1 {
		t.Fatalf("dead after %d attempts (log %+v), want 1 of 5", j.Attempts, j.Log)
	}
	if a := j.Log[0]; a.Status != http.StatusGone || !strings.Contains(a.Error, "410 Gone") || !strings.Contains(a.Error, "asked not to be called again") {
		t.Fatalf("attempt log %+v: want status 410 and the reason", a)
	}
	t.Logf("attempt log: %s", j.Log[0].Error)

	const gone = `kairos_gone_total{topic="acme/gone"}`
	var v float64
	testwait.Until(t, 15*time.Second, func() bool {
		var ok bool
		v, ok = readMetric(url, gone)
		return ok
	}, gone+" exported")
	if v != 1 {
		t.Fatalf("%s = %v, want 1", gone, v)
	}
	waitSettled(t, store) // a retry, were there one, would have come
	if n := len(rcv.all()); n != 1 {
		t.Fatalf("receiver called %d times, want 1", n)
	}
}
