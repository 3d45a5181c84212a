package dispatch

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }

func newStore(t *testing.T) *rdb.Store {
	t.Helper()
	s := rdb.New(testredis.Client(t), rdb.Options{Prefix: testredis.Prefix(t), Shards: 2})
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// claim creates jobs due at the given offsets from now and claims them all
// ahead by the largest offset.
func claim(t *testing.T, s *rdb.Store, ahead time.Duration, offsets ...time.Duration) []rdb.Claimed {
	t.Helper()
	ctx := context.Background()
	now := s.Now()
	for i, off := range offsets {
		k := kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "j" + string(rune('a'+i))}
		if _, err := s.Enqueue(ctx, kairos.Job{JobKey: k, RunAt: now.Add(off), Payload: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	var out []rdb.Claimed
	for sh := range s.Shards() {
		c, err := s.ClaimDue(ctx, sh, 100, ahead, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Jobs...)
	}
	if len(out) != len(offsets) {
		t.Fatalf("claimed %d of %d", len(out), len(offsets))
	}
	return out
}

// TestNothingBeforeItsDueTime: a job claimed ahead is handed out no sooner
// than its due time on the Redis clock, then at once.
func TestNothingBeforeItsDueTime(t *testing.T) {
	s := newStore(t)
	d := New(s, Config{})
	defer d.Close(context.Background())
	cs := claim(t, s, 300*time.Millisecond, 150*time.Millisecond)
	d.Add(context.Background(), cs)
	if d.Held() != 1 {
		t.Fatalf("held %d, want 1", d.Held())
	}
	jobs, err := d.Next(context.Background(), "acme", "orders", 10, 2*time.Second, 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("next: %d jobs, %v", len(jobs), err)
	}
	if now := s.Now(); now.Before(cs[0].Due) {
		t.Fatalf("handed out %v before its due time", cs[0].Due.Sub(now))
	}
	if late := s.Now().Sub(cs[0].Due); late > time.Second {
		t.Errorf("handed out %v after its due time", late)
	}
	if d.Held() != 0 || d.Capacity() != 5000 {
		t.Errorf("held %d, capacity %d after the hand-out", d.Held(), d.Capacity())
	}
}

// TestOverdueAndClosedAreReleased: a job nobody took within Hold of its
// due time, and jobs still held at Close, are given back: due again at
// their own time, with no attempt counted.
func TestOverdueAndClosedAreReleased(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := New(s, Config{Hold: 50 * time.Millisecond})
	cs := claim(t, s, 10*time.Second, 0, 5*time.Second)
	d.Add(ctx, cs)
	time.Sleep(100 * time.Millisecond)
	if jobs, _ := d.Next(ctx, "acme", "orders", 10, 10*time.Millisecond, 0); len(jobs) != 0 {
		t.Fatalf("handed out %d overdue jobs", len(jobs))
	}
	d.Close(ctx)
	d.Add(ctx, nil) // after Close: nothing held
	for _, c := range cs {
		j, err := s.GetJob(ctx, c.Job.JobKey)
		if err != nil {
			t.Fatal(err)
		}
		if j.Attempts != 0 || j.State == kairos.StateActive || !j.NextRunAt.Equal(c.Due) {
			t.Errorf("%s after release: %s, attempts %d, next %v (due %v)", j.ID, j.State, j.Attempts, j.NextRunAt, c.Due)
		}
	}
	if d.Held() != 0 {
		t.Errorf("held %d after Close", d.Held())
	}
}
