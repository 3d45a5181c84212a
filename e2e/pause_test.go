package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// A topic paused for 10 s under a steady load of creates delivers nothing
// while paused (beyond jobs claimed before the pause: a slot ahead), keeps
// accepting jobs, and after resume delivers every job exactly once, none
// before its due time.
func TestPauseTopicUnderLoad(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	ctx := context.Background()
	rcv := newReceiver(t, nil)
	e.putTopic("orders", rcv.URL)

	type created struct {
		id    string
		runAt time.Time
	}
	var (
		mu   sync.Mutex
		jobs []created
	)
	const rate, lasting = 50, 14 * time.Second // creates a second, for how long
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		end := time.After(lasting)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-end:
				return
			case <-tick.C:
			}
			j, err := e.c.CreateJob(ctx, "orders", client.JobRequest{ID: fmt.Sprintf("p%04d", i), Delay: client.Duration(200 * time.Millisecond),
				Payload: json.RawMessage(`{"n":1}`)})
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			mu.Lock()
			jobs = append(jobs, created{j.ID, j.RunAt.Time})
			mu.Unlock()
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()

	time.Sleep(2 * time.Second) // the point: 2 s of load before the pause
	tp, err := e.c.PauseTopic(ctx, "orders")
	if err != nil || !tp.Paused {
		t.Fatalf("pause: %+v %v", tp, err)
	}
	paused := time.Now()
	time.Sleep(10 * time.Second) // the point: paused for 10 s under load, nothing may be delivered
	resumed := time.Now()
	if tp, err = e.c.ResumeTopic(ctx, "orders"); err != nil || tp.Paused {
		t.Fatalf("resume: %+v %v", tp, err)
	}
	wg.Wait()

	mu.Lock()
	all := append([]created(nil), jobs...)
	mu.Unlock()
	if len(all) < rate*10 {
		t.Fatalf("only %d jobs created", len(all))
	}
	rcv.waitHits(t, len(all), 30*time.Second)
	waitSettled(t, e.store) // any duplicate has come
	byJob := rcv.byJob()
	// jobs claimed before the pause answered (a slot ahead) may still
	// arrive just after it
	const slack = 500 * time.Millisecond
	during := 0
	for _, h := range rcv.all() {
		if h.At.After(paused.Add(slack)) && h.At.Before(resumed) {
			during++
			t.Errorf("job %s delivered at %v, %v into the pause", h.Header.Get("Kairos-Job-Id"), h.At.Format("15:04:05.000"), h.At.Sub(paused))
		}
	}
	held := 0
	for _, j := range all {
		hs := byJob[j.id]
		if len(hs) != 1 {
			t.Errorf("job %s delivered %d times", j.id, len(hs))
			continue
		}
		if hs[0].At.Before(j.runAt) {
			t.Errorf("job %s delivered %v early", j.id, j.runAt.Sub(hs[0].At))
		}
		if j.runAt.After(paused.Add(slack)) && j.runAt.Before(resumed) {
			held++
		}
	}
	t.Logf("%d jobs created, %d due while paused (held), %d delivered while paused", len(all), held, during)
	if held < rate*9 {
		t.Errorf("only %d jobs fell due while paused", held)
	}
}
