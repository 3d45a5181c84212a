package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// spec describes the jobs of one run: job i has id "<run>-<i>" and is due
// at due(i), unix ms on the Redis clock.
type spec struct {
	run    string
	due    func(i int) int64
	labels func(i int) map[string]string // job i's; nil: none
}

func (s spec) id(i int) string { return s.run + "-" + strconv.Itoa(i) }

// job is job i's create request.
func (s spec) job(i int) client.JobRequest {
	due := s.due(i)
	j := client.JobRequest{ID: s.id(i), RunAt: time.UnixMilli(due), Payload: appendPayload(nil, s.run, i, due)}
	if s.labels != nil {
		j.Labels = s.labels(i)
	}
	return j
}

// loadResult is what creating a run's jobs took.
type loadResult struct {
	Created int
	Elapsed time.Duration
	Lat     []time.Duration // per call
	Stopped bool            // stopAt came before every job was created
	// Late counts the jobs whose create call returned after their due time.
	Late int
	// MaxLag is the longest a paced call returned after its planned time.
	MaxLag time.Duration
}

// loadOpts are the optional parts of a load.
type loadOpts struct {
	stopAt time.Time // no call starts after it
	// progress is called every 10 seconds with the jobs created so far.
	progress func(created int, elapsed time.Duration)
	// pace, when set, is the earliest time (local clock) call k may start.
	pace func(k int) time.Time
	// send, when set, makes call k instead of a create of jobs lo..hi-1:
	// what is created is then its own (a schedule, say), and due(i) is
	// when it first fires.
	send func(ctx context.Context, lo, hi int) error
}

func (l loadResult) rate() float64 {
	if l.Elapsed <= 0 {
		return 0
	}
	return float64(l.Created) / l.Elapsed.Seconds()
}

// load creates jobs 0..n-1 of s with the configured number of concurrent
// clients, size jobs per call (1: single creates, else batch creates), call
// k holding jobs k*size and on (or makes o.send's calls). It returns at the
// first error.
func (b *Bench) load(ctx context.Context, s spec, n, size int, o loadOpts) (loadResult, error) {
	size = max(size, 1)
	chunks := (n + size - 1) / size
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, created, late, maxLag atomic.Int64
	var stopped atomic.Bool
	lats := make([][]time.Duration, b.cfg.Clients)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range b.cfg.Clients {
		wg.Go(func() {
			var jobs []client.JobRequest
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= chunks {
					return
				}
				if o.pace != nil {
					sleep(ctx, time.Until(o.pace(k)))
				}
				if !o.stopAt.IsZero() && time.Now().After(o.stopAt) {
					stopped.Store(true)
					return
				}
				lo, hi := k*size, min(n, (k+1)*size)
				if o.send == nil {
					jobs = jobs[:0]
					for i := lo; i < hi; i++ {
						jobs = append(jobs, s.job(i))
					}
				}
				t0 := time.Now()
				var err error
				if o.send != nil {
					err = o.send(ctx, lo, hi)
				} else {
					err = b.create(ctx, jobs, size > 1)
				}
				lats[w] = append(lats[w], time.Since(t0))
				if err != nil {
					cancel(err)
					return
				}
				created.Add(int64(hi - lo))
				now := b.now().UnixMilli()
				for i := lo; i < hi; i++ {
					if s.due(i) < now {
						late.Add(1)
					}
				}
				if o.pace != nil {
					storeMax(&maxLag, int64(time.Since(o.pace(k))))
				}
			}
		})
	}
	if progress := o.progress; progress != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					progress(int(created.Load()), time.Since(start))
				}
			}
		}()
	}
	wg.Wait()
	res := loadResult{Created: int(created.Load()), Elapsed: time.Since(start), Stopped: stopped.Load(),
		Late: int(late.Load()), MaxLag: time.Duration(maxLag.Load())}
	for _, l := range lats {
		res.Lat = append(res.Lat, l...)
	}
	if err := context.Cause(ctx); err != nil && res.Created < n && !res.Stopped {
		return res, err
	}
	return res, nil
}

// drop removes the jobs of a run that may still be pending: at once when
// the target can (a self-started kairos) and no other run's jobs are to
// stay (keepPending), else by cancelling jobs 0..n-1 through the API,
// skipping those for which skip(i) holds.
func (b *Bench) drop(ctx context.Context, s spec, n int, skip func(i int) bool) error {
	if b.t.DropJobs != nil && !b.keepPending {
		if _, err := b.t.DropJobs(ctx); err != nil {
			return err
		}
		b.settleMemory(ctx)
		return nil
	}
	err := b.forEach(ctx, n, func(ctx context.Context, i int) error {
		if skip != nil && skip(i) {
			return nil
		}
		return b.cancel(ctx, s.id(i))
	})
	b.settleMemory(ctx)
	return err
}

// forEach calls f for 0..n-1 from the configured number of concurrent
// clients, and returns the first error (a client stops at its own).
func (b *Bench) forEach(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range b.cfg.Clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
