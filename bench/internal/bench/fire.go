package bench

import (
	"context"
	"fmt"
	"time"
)

// fired is a run of jobs created ahead and then delivered.
type fired struct {
	spec     spec
	size     int // jobs a create call carried
	run      *Arrivals
	t0       time.Time     // the earliest due time, Redis clock
	lead     time.Duration // how far ahead of t0 creation started
	ahead    time.Duration // how far ahead of t0 creation ended; negative: late
	load     loadResult
	delivery Delivery
	cpu      Usage // from just before the first due time to the end of the deliveries
	life     Usage // from the first create call to the end of the deliveries
}

// fire creates n jobs, job i due at t0 + at(i) (at most span after t0),
// by calls of size jobs (1: single creates; 0: --batch) started lead
// before t0; then it waits for the deliveries and sums them up. profile
// names the CPU profile of the delivery phase; after, if set, runs once the
// deliveries are in and before the jobs left pending are removed.
func (b *Bench) fire(ctx context.Context, scenario string, n, size int, at func(i int) time.Duration, span, settle time.Duration, profile string, after func()) (*fired, error) {
	if size <= 0 {
		size = b.cfg.BatchSize
	}
	f := &fired{size: size, lead: b.lead(n, size)}
	f.t0 = b.now().Add(f.lead).Truncate(time.Millisecond)
	t0 := f.t0.UnixMilli()
	f.spec = b.newSpec(scenario, func(i int) int64 { return t0 + at(i).Milliseconds() })
	f.run = b.rec.Expect(f.spec.run, n)
	stray := b.rec.Stray()
	life := b.mark(ctx)
	l, err := b.load(ctx, f.spec, n, size, loadOpts{})
	f.load = l
	f.ahead = f.t0.Sub(b.now())
	if err == nil {
		if f.ahead < 0 {
			b.progressf("%s: creating the jobs overran the lead of %v by %v; raise --lead", scenario, f.lead, -f.ahead)
		}
		// Measure from just before the first due time, not the idle lead.
		sleep(ctx, time.Until(b.local(f.t0))-50*time.Millisecond)
		mark := b.mark(ctx)
		stop := b.profile(profile)
		b.await(ctx, f.run, n, f.t0.Add(span), settle)
		stop()
		f.cpu = b.usage(ctx, mark)
		if b.cfg.LifeTail > 0 {
			b.progressf("%s: counting Redis CPU for %v more: the work the jobs left behind", scenario, b.cfg.LifeTail)
			sleep(ctx, b.cfg.LifeTail)
		}
		f.life = b.usage(ctx, life)
		f.delivery = f.run.Delivery(b.offset, b.rec.Stray()-stray)
		if after != nil {
			after()
		}
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	derr := b.drop(cctx, f.spec, n, func(i int) bool { return f.run.count[i].Load() > 0 })
	if err != nil {
		return f, err
	}
	if derr != nil {
		return f, fmt.Errorf("clean up: %w", derr)
	}
	return f, ctx.Err()
}

// cleanupContext bounds a clean-up that must run even when ctx has ended.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
}
