// Package bench is kairos's load tool, run as cmd/kairos-bench. It drives
// a kairos through its HTTP API with the client package, receives the
// callbacks on a loopback server of its own, and measures create
// throughput, firing precision, burst drain time, Redis commands per job
// and Redis memory per pending job against the targets of issue 5.
// cmd/kairos-bench runs the kairos binary under test (or names a running
// one) and hands it over as a Target.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// Target is the kairos under test.
type Target struct {
	URL   string // API base URL, on loopback
	Token string // bearer token of the tenant the bench acts as
	// Redis reads figures of the Redis kairos runs on; nil when the tool
	// has no access to it (memory and command figures are then left out).
	Redis Redis
	// DropJobs deletes every job the target holds, at once; set for a
	// kairos the tool started itself on its own key prefix. When nil, the
	// bench cancels its pending jobs through the API.
	DropJobs func(ctx context.Context) (int, error)
	// ProcessCPU returns the CPU time the kairos process has used so far,
	// added to this process's in the figures; nil when unknown.
	ProcessCPU func() time.Duration
	// Counters returns monotonic counters of the kairos process worth
	// reading next to the figures, such as its garbage collections; nil if none.
	Counters func() map[string]int64
	// StartProcess starts one more kairos process on the target's Redis
	// and prefix (all roles), for the idle figures of several processes;
	// stop stops it. Nil when the tool did not start the target.
	StartProcess func(ctx context.Context) (stop func(), err error)
	// ChildEnv is the environment (KAIROS_* variables) under which a
	// kairos binary started by the tool serves the target's Redis, prefix
	// and tenants (Token works with it); nil when the tool did not start
	// the target.
	ChildEnv []string
	// Name describes the target in the report.
	Name string
}

// Config holds settings every scenario shares. Zero values take defaults.
type Config struct {
	Clients     int // concurrent API clients; default 32
	BatchSize   int // jobs per batch create; default 1000
	Concurrency int // the bench topic's consumers; default 64
	// TopicRate, when set, limits the bench topic to that many deliveries
	// a second (flow control), for the cost of a limit in any scenario.
	TopicRate int
	Lead      time.Duration // time between starting to create a run and its first due time; default: from the measured create rate
	Grace     time.Duration // how long after the last due time missing jobs are waited for; default 5s
	// LifeTail is how long after the last delivery Redis CPU per job life
	// goes on being counted: the work a job leaves behind it (a lease
	// entry processed later, say) is then in the figure. Default 0.
	LifeTail   time.Duration
	ProfileDir string    // where CPU profiles of the measured phases go; "" for none
	Progress   io.Writer // progress lines; nil for none
}

func (c Config) withDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 32
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Grace <= 0 {
		c.Grace = 5 * time.Second
	}
	return c
}

// Bench runs scenarios against one target. Scenarios run one at a time.
type Bench struct {
	t      Target
	cfg    Config
	rec    *Receiver
	api    *client.Client
	hc     *http.Client // api's, whose idle connections Close closes
	topic  string
	offset time.Duration // Redis clock minus local clock
	rate   float64       // batch create rate measured at start, jobs/s
	single float64       // single create rate measured at start, jobs/s
	// schedRate is the schedule create rate last measured, schedules/s.
	schedRate float64
	// keepPending is set while jobs of another run must stay pending (the
	// sequence's): drop then cancels its own run's jobs through the API
	// instead of dropping every job the target holds.
	keepPending bool
	mu          sync.Mutex // guards Progress
}

// New starts the receiver, registers the bench's topic on the target and
// checks that a callback gets through. Close undoes it.
func New(ctx context.Context, t Target, cfg Config) (*Bench, error) {
	cfg = cfg.withDefaults()
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("profile directory: %w", err)
		}
	}
	rec, err := StartReceiver()
	if err != nil {
		return nil, fmt.Errorf("start receiver: %w", err)
	}
	api, hc, err := newClient(t.URL, t.Token, cfg.Clients)
	if err != nil {
		rec.Close()
		return nil, err
	}
	b := &Bench{t: t, cfg: cfg, rec: rec, api: api, hc: hc, topic: "bench-" + randomID()}
	b.offset = b.clockOffset(ctx)
	if err := b.putTopic(ctx, rec.URL); err != nil {
		b.Close(ctx)
		return nil, fmt.Errorf("register topic: %w", err)
	}
	if err := b.warmUp(ctx); err != nil {
		b.Close(ctx)
		return nil, err
	}
	return b, nil
}

// Close deletes the bench's topic and stops the receiver.
func (b *Bench) Close(ctx context.Context) error {
	err := b.deleteTopic(ctx)
	b.hc.CloseIdleConnections()
	b.rec.Close()
	return err
}

// warmUp sends a few jobs due now and waits for them, so that the topic's
// consumers run and connections are open, then times one batch create
// and as many single creates, for the default lead.
func (b *Bench) warmUp(ctx context.Context) error {
	const n = 20
	s := b.newSpec("warm", func(int) int64 { return b.now().UnixMilli() })
	run := b.rec.Expect(s.run, n)
	if _, err := b.load(ctx, s, n, 1, loadOpts{}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for run.Arrived() < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("warm-up: %d of %d callbacks arrived within 15s: can kairos reach %s (KAIROS_ALLOW_PRIVATE_URLS=1)?", run.Arrived(), n, b.rec.URL)
		}
		sleep(ctx, 10*time.Millisecond)
	}
	far := b.now().Add(24 * time.Hour).UnixMilli()
	probe := b.newSpec("probe", func(int) int64 { return far })
	size := b.cfg.BatchSize
	l, err := b.load(ctx, probe, size, size, loadOpts{})
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	b.rate = l.rate()
	if err := b.drop(ctx, probe, size, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	probe = b.newSpec("probe1", func(int) int64 { return far })
	if l, err = b.load(ctx, probe, size, 1, loadOpts{}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	b.single = l.rate()
	return b.drop(ctx, probe, size, nil)
}

// now is the current time on the Redis clock.
func (b *Bench) now() time.Time { return time.Now().Add(b.offset) }

// local converts a time on the Redis clock to the local clock.
func (b *Bench) local(t time.Time) time.Time { return t.Add(-b.offset) }

// newSpec names a run after its scenario.
func (b *Bench) newSpec(scenario string, due func(i int) int64) spec {
	return spec{run: scenario + "-" + randomID()[:6], due: due}
}

// lead is how far ahead of its first due time a run of n jobs is created
// by calls of size jobs.
func (b *Bench) lead(n, size int) time.Duration {
	if b.cfg.Lead > 0 {
		return b.cfg.Lead
	}
	rate := b.rate
	if size <= 1 {
		rate = b.single
	}
	rate = max(rate, 1000)
	d := 1500*time.Millisecond + time.Duration(2*float64(n)/rate*float64(time.Second))
	return min(max(d, 2*time.Second), time.Minute)
}

// await waits until every job of run arrived and settle has passed since
// the last arrival, or until grace after the last due time.
func (b *Bench) await(ctx context.Context, run *Arrivals, n int, lastDue time.Time, settle time.Duration) {
	deadline := b.local(lastDue).Add(b.cfg.Grace)
	for ctx.Err() == nil {
		now := time.Now()
		if run.Arrived() >= n && now.Sub(run.Last()) >= settle && now.After(b.local(lastDue)) {
			return
		}
		if now.After(deadline) {
			return
		}
		sleep(ctx, 10*time.Millisecond)
	}
}

// profile starts a CPU profile of this process to ProfileDir/name.pprof
// and returns its stop function.
func (b *Bench) profile(name string) func() {
	if b.cfg.ProfileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(b.cfg.ProfileDir, name+".pprof"))
	if err != nil {
		b.progressf("cpu profile %s: %v", name, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.progressf("cpu profile %s: %v", name, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func (b *Bench) progressf(format string, args ...any) {
	if b.cfg.Progress == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.cfg.Progress, "bench: "+format+"\n", args...)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func randomID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
