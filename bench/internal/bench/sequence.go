package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// SequenceConfig sizes the sequence scenario.
type SequenceConfig struct {
	BurstJobs int // jobs of each burst; default 20,000
	// Pending is how many jobs are loaded pending an hour ahead for the
	// precision run and the last burst; default 100,000; below 0: none,
	// and those run on the store as it is.
	Pending       int
	PrecisionJobs int           // default 20,000
	PrecisionOver time.Duration // default 10s
	// LifeTail is how long after the last delivery of the precision run
	// and of the last burst Redis CPU per job life goes on being counted;
	// default 60s; below 0: not at all.
	LifeTail time.Duration
}

func (c SequenceConfig) withDefaults() SequenceConfig {
	if c.BurstJobs <= 0 {
		c.BurstJobs = 20000
	}
	if c.Pending == 0 {
		c.Pending = 100_000
	}
	if c.PrecisionJobs <= 0 {
		c.PrecisionJobs = 20000
	}
	if c.PrecisionOver <= 0 {
		c.PrecisionOver = 10 * time.Second
	}
	if c.LifeTail == 0 {
		c.LifeTail = time.Minute
	}
	return c
}

// The targets of issue 44 (2 cores).
const (
	seqDrain    = 1.0 // s: the burst among the pending jobs drained
	seqFarRatio = 1.3 // burst-far's drain time over burst-empty's
	seqCPU      = 30  // µs of Redis CPU per job life of the precision run
	seqBytes    = 250 // B of Redis memory per pending job
)

// The loaded jobs are due from an hour ahead over a few minutes: none falls
// due during the sequence.
const (
	pendingAhead  = time.Hour
	pendingSpread = 5 * time.Minute
)

// SequenceResult is the sequence scenario, the realistic case of issue 44
// on one kairos: a burst on an empty store (burst-empty), the same burst
// behind one job due an hour ahead in another topic (burst-far), jobs
// loaded pending an hour ahead (pending), precision among them
// (precision-pending), a burst among them (burst-pending), and their
// removal.
type SequenceResult struct {
	BurstEmpty *BurstResult `json:"burst_empty,omitempty"`
	BurstFar   *BurstResult `json:"burst_far,omitempty"`
	// FarRatio is burst-far's drain time over burst-empty's.
	FarRatio  float64          `json:"burst_far_ratio,omitempty"`
	Pending   *PendingLoad     `json:"pending,omitempty"`
	Precision *PrecisionResult `json:"precision_pending,omitempty"`
	Burst     *BurstResult     `json:"burst_pending,omitempty"`
	// RemoveSeconds is how long removing the pending jobs took.
	RemoveSeconds   float64 `json:"remove_seconds,omitempty"`
	LifeTailSeconds float64 `json:"life_tail_seconds"`
	// Checks are the figures held to issue 44's targets: the summary.
	Checks []Check `json:"checks"`
}

// Sequence runs the sequence scenario and removes every job it created.
func (b *Bench) Sequence(ctx context.Context, c SequenceConfig) (*SequenceResult, error) {
	c = c.withDefaults()
	r := &SequenceResult{LifeTailSeconds: max(c.LifeTail, 0).Seconds()}
	// The first two bursts are held to their drain times: no tail.
	defer func(tail time.Duration) { b.cfg.LifeTail = tail }(b.cfg.LifeTail)
	b.cfg.LifeTail = 0
	var err error
	b.progressf("sequence: burst-empty, %s jobs due at one instant on an empty store", fmtInt(int64(c.BurstJobs)))
	if r.BurstEmpty, err = b.burst(ctx, c.BurstJobs, burstRun{phase: "burst-empty", among: "on an empty store", profile: "sequence-burst-empty"}); err != nil {
		return r, fmt.Errorf("sequence: burst-empty: %w", err)
	}
	if r.BurstFar, err = b.burstFar(ctx, c.BurstJobs); err != nil {
		return r, fmt.Errorf("sequence: burst-far: %w", err)
	}
	if d := r.BurstEmpty.DrainSeconds; d > 0 {
		r.FarRatio = r.BurstFar.DrainSeconds / d
	}
	b.cfg.LifeTail = max(c.LifeTail, 0)
	if err := b.amongPending(ctx, c, r); err != nil {
		return r, fmt.Errorf("sequence: %w", err)
	}
	r.Checks, _ = r.summary()
	return r, nil
}

// burstFar registers a second topic, creates one job in it due an hour
// ahead, runs the burst behind it, then cancels the job and deletes the
// topic.
func (b *Bench) burstFar(ctx context.Context, n int) (r *BurstResult, err error) {
	topic := b.topic + "-later"
	b.progressf("sequence: burst-far, the same burst behind one job due an hour ahead in topic %s", topic)
	if _, _, err := b.api.PutTopic(ctx, topic, client.TopicRequest{CallbackURL: b.rec.URL}); err != nil {
		return nil, fmt.Errorf("put topic %s: %w", topic, err)
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if cerr := b.api.CancelJob(cctx, topic, "far"); cerr != nil && !client.IsNotFound(cerr) && err == nil {
			err = fmt.Errorf("cancel the far job: %w", cerr)
		}
		if derr := b.api.DeleteTopic(cctx, topic); derr != nil && err == nil {
			err = fmt.Errorf("delete topic %s: %w", topic, derr)
		}
	}()
	if _, err := b.api.CreateJob(ctx, topic, client.JobRequest{ID: "far", Delay: client.Duration(time.Hour)}); err != nil {
		return nil, fmt.Errorf("create the far job: %w", err)
	}
	b.keepPending = true
	defer func() { b.keepPending = false }()
	return b.burst(ctx, n, burstRun{phase: "burst-far", among: "behind one job due an hour ahead in another topic", profile: "sequence-burst-far"})
}

// amongPending loads c.Pending jobs pending an hour ahead, runs precision
// and a burst among them, and removes them.
func (b *Bench) amongPending(ctx context.Context, c SequenceConfig, r *SequenceResult) (err error) {
	pending := 0
	if c.Pending > 0 {
		b.progressf("sequence: pending, loading %s jobs due an hour ahead", fmtInt(int64(c.Pending)))
		var p *PendingLoad
		p, err = b.loadPending(ctx, "pending", c.Pending, pendingAhead, pendingSpread, 0, nil)
		r.Pending, pending = p, p.Loaded
		b.keepPending = true
		defer func() {
			b.keepPending = false
			b.progressf("sequence: removing the pending jobs")
			t0 := time.Now()
			if derr := b.dropPending(ctx, p); derr != nil && err == nil {
				err = fmt.Errorf("pending: %w", derr)
			}
			r.RemoveSeconds = time.Since(t0).Seconds()
		}()
		if err != nil {
			return fmt.Errorf("pending: %w", err)
		}
	}
	b.progressf("sequence: precision-pending, %s jobs due over %v among %s pending", fmtInt(int64(c.PrecisionJobs)), c.PrecisionOver, fmtInt(int64(pending)))
	r.Precision, err = b.precision(ctx, c.PrecisionJobs, c.PrecisionOver,
		precisionRun{phase: "precision-pending", pending: pending, cpuLimit: seqCPU, profile: "sequence-precision"})
	if err != nil {
		return err
	}
	b.progressf("sequence: burst-pending, %s jobs due at one instant among %s pending", fmtInt(int64(c.BurstJobs)), fmtInt(int64(pending)))
	r.Burst, err = b.burst(ctx, c.BurstJobs, burstRun{phase: "burst-pending", among: amongPhrase(pending), drainLimit: seqDrain, profile: "sequence-burst"})
	return err
}

// amongPhrase says what a run fired among: n jobs loaded pending.
func amongPhrase(n int) string {
	if n == 0 {
		return "on the store as it is (none loaded pending)"
	}
	return fmt.Sprintf("among %s jobs pending an hour ahead", fmtInt(int64(n)))
}
