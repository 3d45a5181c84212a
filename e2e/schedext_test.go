package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// max_runs holds across a SIGKILL of the process that fired the last run:
// the other process delivers that occurrence again (same job, attempt 2),
// and no occurrence after it fires: exactly max_runs occurrences reach the
// receiver.
func TestScheduleMaxRunsAcrossKillOfTheLastRunsProcess(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	var hangID atomic.Value
	hangID.Store("")
	hung := make(chan struct{}, 1)
	rcv := newReceiver(t, func(n int, h hit) int {
		if h.Header.Get("Kairos-Job-Id") == hangID.Load() && h.Header.Get("Kairos-Attempt") == "1" {
			hung <- struct{}{}
			time.Sleep(4 * time.Second) // its process is killed meanwhile
		}
		return http.StatusOK
	})
	putTopic(t, store, "t", rcv.URL, 2*time.Second)
	procs := []*testproc.Proc{startKairos(t, "A", prefix), startKairos(t, "B", prefix)}
	for _, p := range procs {
		p.WaitLog(t, "scanner started", 15*time.Second)
	}
	const maxRuns = 3
	first := store.Now().Add(time.Second).Truncate(time.Second)
	last := first.Add((maxRuns - 1) * time.Second)
	hangID.Store(kairos.OccurrenceID("three", last))
	if _, err := store.PutSchedule(context.Background(), kairos.Schedule{Tenant: "acme", Topic: "t", ID: "three", Every: time.Second,
		StartAt: first, CreatedAt: store.Now(), MaxRuns: maxRuns, Job: kairos.Job{Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hung:
	case <-time.After(20 * time.Second):
		t.Fatal("the last run never arrived")
	}
	killed := busyProcess(t, procs)
	killed.Signal(syscall.SIGKILL)
	t.Logf("killed %s delivering the last run %s", killed.Name, hangID.Load())

	// the last run is delivered again by the process that is left
	testwait.UntilNil(t, 30*time.Second, func() error {
		if hs := rcv.byJob()[hangID.Load().(string)]; len(hs) < 2 {
			return fmt.Errorf("%d requests in all", len(rcv.all()))
		}
		return nil
	}, "the last run delivered again")
	sc, err := store.GetSchedule(context.Background(), "acme", "t", "three")
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Completed || sc.Runs != maxRuns || !sc.Pending.IsZero() {
		t.Fatalf("schedule: completed %v runs %d pending %v", sc.Completed, sc.Runs, sc.Pending)
	}
	// nothing more is due (a run past max_runs would be): none fires
	waitSettled(t, store)
	jobs := rcv.byJob()
	if len(jobs) != maxRuns {
		t.Fatalf("%d occurrences delivered, want exactly %d: %v", len(jobs), maxRuns, keys(jobs))
	}
	for at := first; !at.After(last); at = at.Add(time.Second) {
		if len(jobs[kairos.OccurrenceID("three", at)]) == 0 {
			t.Errorf("occurrence %v never delivered", at)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// With a receiver slower than the period, overlap skip never fires while
// the previous occurrence is in flight (the instant right after the first
// never fires, and is counted), and buffer_one fires that instant once the
// first ended, never two at once.
func TestScheduleOverlapWithSlowReceiver(t *testing.T) {
	t.Parallel()
	for _, ov := range []kairos.Overlap{kairos.OverlapSkip, kairos.OverlapBufferOne} {
		t.Run(string(ov), func(t *testing.T) {
			t.Parallel()
			prefix := testredis.Prefix(t)
			store := procStore(t, prefix)
			var mu sync.Mutex
			type span struct {
				id         string
				start, end time.Time
			}
			var spans []span
			rcv := newReceiver(t, func(n int, h hit) int {
				time.Sleep(2500 * time.Millisecond) // the point: slower than the period of 1s
				mu.Lock()
				spans = append(spans, span{h.Header.Get("Kairos-Job-Id"), h.At, time.Now()})
				mu.Unlock()
				return http.StatusOK
			})
			putTopic(t, store, "t", rcv.URL, 10*time.Second)
			p := startKairos(t, "A", prefix)
			p.WaitLog(t, "scanner started", 15*time.Second)
			first := store.Now().Add(time.Second).Truncate(time.Second)
			if _, err := store.PutSchedule(context.Background(), kairos.Schedule{Tenant: "acme", Topic: "t", ID: "slow", Every: time.Second,
				StartAt: first, CreatedAt: store.Now(), Overlap: ov, Job: kairos.Job{Payload: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, 30*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(spans) >= 3
			}, "3 deliveries")
			if err := store.PauseSchedule(context.Background(), "acme", "t", "slow", true); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got := append([]span(nil), spans[:3]...)
			mu.Unlock()
			for i := 1; i < len(got); i++ {
				if got[i].start.Before(got[i-1].end) {
					t.Errorf("%s started at %v, before %s ended at %v", got[i].id, got[i].start, got[i-1].id, got[i-1].end)
				}
			}
			second := kairos.OccurrenceID("slow", first.Add(time.Second))
			if got[0].id != kairos.OccurrenceID("slow", first) {
				t.Fatalf("first delivery %s", got[0].id)
			}
			switch ov {
			case kairos.OverlapSkip:
				if got[1].id == second {
					t.Errorf("skip fired %s, which came while the first was in flight", second)
				}
			case kairos.OverlapBufferOne:
				if got[1].id != second {
					t.Errorf("buffer_one fired %s after the first, want the buffered %s", got[1].id, second)
				}
			}
			sc, err := store.GetSchedule(context.Background(), "acme", "t", "slow")
			if err != nil || sc.Skipped == 0 {
				t.Fatalf("skipped %d (%v), want some", sc.Skipped, err)
			}
			c, err := store.TopicCounters(context.Background(), "acme", "t")
			if err != nil || c.Occurrences.Skipped == 0 {
				t.Fatalf("topic counters skipped %d (%v)", c.Occurrences.Skipped, err)
			}
			// The one scanning process counted each skip in its metric too
			// (paused: no claim skips more).
			metric := `kairos_occurrences_skipped_total{topic="acme/t"}`
			testwait.UntilNil(t, testwait.Patience, func() error {
				if v, ok := readMetric(p.URL(t), metric); !ok || int64(v) != sc.Skipped {
					return fmt.Errorf("%s reads %v (found %v)", metric, v, ok)
				}
				return nil
			}, fmt.Sprintf("the metric counting the schedule's %d skipped", sc.Skipped))
		})
	}
}
