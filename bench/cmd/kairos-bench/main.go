// Command kairos-bench is kairos's load tool. It drives a kairos through
// its API with the client package, receives the callbacks on a loopback
// server of its own and reads Redis INFO (and, for the cost scenario, the
// slow log) for its figures: create throughput, firing precision, burst
// drain time, Redis CPU, commands and memory per job. It measures a
// kairos binary it runs as `kairos serve` on a fresh key prefix, or a
// running one on loopback. It is a module of its own: it reaches kairos
// only through the public client, the binary and Redis.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kairos-sh/kairos/bench/internal/bench"
)

const usage = `kairos-bench: the load tool of kairos

usage:
  kairos-bench --redis-url redis://HOST:PORT [--kairos-bin bin/kairos] [flags]
      run the kairos binary (kairos serve) on that Redis, under a fresh key
      prefix that is removed afterwards, and measure it
  kairos-bench --url http://127.0.0.1:PORT --token TOKEN [--redis-url URL] [flags]
      measure a running kairos; it must allow private URLs
      (KAIROS_ALLOW_PRIVATE_URLS=1), since callbacks go to this tool on
      loopback; --redis-url then names its Redis, read for memory and
      command figures only (cost needs it). TOKEN may come from KAIROS_TOKEN.

Scenarios (--scenario, comma-separated, or all; default sequence):
  sequence   the realistic case, on one kairos (about 3 minutes): burst-empty,
             --burst-jobs jobs due at one instant on an empty store; burst-far, the
             same burst behind one job due an hour ahead in a second topic (drain
             time against burst-empty's); pending, --sequence-pending jobs loaded
             due an hour ahead (bytes per pending job, load rate); precision-pending,
             --precision-jobs jobs due over --precision-over among them; burst-pending,
             --burst-jobs jobs due at one instant among them, each of the last two
             with Redis CPU per job life counted until --life-tail (60s here) after
             its last delivery; then the pending jobs are removed. A summary holds
             the figures to the targets of issue 44
  enqueue    --jobs jobs due in an hour, created by --clients clients with single
             and batch creates: jobs/s, latency, Redis memory per pending job
  precision  --precision-jobs jobs due uniformly over --precision-over: lateness
             at the receiver, and jobs fired early, missing or duplicated
  burst      --burst-jobs jobs due at one instant: time to the last delivery
  cost       --cost-jobs jobs through their life: Redis commands per job; again
             with Redis's slow log on: Redis time by script; then --idle-jobs
             pending far ahead: Redis commands per second and per day idle, for
             1 and 3 kairos processes (3: when this tool starts kairos) with 1
             and 100 topics (4 windows of --idle-window after --idle-settle)
  sustained  jobs created and due continuously, each --sustained-lead after its
             creation, at each of --sustained-rates for --sustained-step: lateness,
             CPU, and the sustained capacity (about 1.5 minutes; not in the default)
  scale      --scale-jobs jobs pending (10M take gigabytes of Redis memory: docs/performance.md), then precision again
  schedules  --schedules schedules every --schedules-every (1s) for --schedules-window:
             occurrences/s, lateness, missing or doubled occurrences, Redis CPU per
             occurrence; then --scale-schedules every --scale-schedules-every (1m) for
             --scale-schedules-window: create rate, Redis memory per schedule, the same
             figures; each beside one-shot jobs at its rate over its window, created one per
             POST and then by batches (about 12 minutes; not in the default)
  coldstart  --kairos-bin started --coldstart-starts times as kairos serve --roles api on
             the same Redis: time from exec to the first 200 from /readyz (median), the
             first and second job creates' times and Redis commands (not in the default)
  flow       --flow-rate x 10 jobs due at one instant, first with no limits, then with the
             bench topic limited to --flow-rate a second: achieved rate, busiest second at
             the receiver, Redis CPU per job with and without; then parallelism
             --flow-parallelism with a receiver holding each request --flow-hold: most in
             flight at once, achieved rate (about 30 s; not in the default)

Every scenario reports Redis CPU per job: the growth of INFO used_cpu_user+sys
over the scenario's window (background included) divided by its jobs.

flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "kairos-bench:", err)
		os.Exit(1)
	}
}

// run runs the load tool (internal/bench) against a kairos binary it
// starts or a running one. -h or --help prints the usage on stdout
// and returns flag.ErrHelp.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// progress lines and the logs of the kairos processes started here
	// share stderr, written from many goroutines
	stderr = &lockedWriter{w: stderr}
	fs := flag.NewFlagSet("kairos-bench", flag.ContinueOnError)
	fs.SetOutput(usageOut(args, stdout, stderr))
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	var (
		o                         bench.Options
		redisURL, apiURL, token   string
		scenarios, prefix, logLvl string
		idleJobs, shards, pending int
		rates                     string
		timeout                   time.Duration
		quiet                     bool
	)
	fs.StringVar(&redisURL, "redis-url", "", "Redis to run kairos on (or, with --url, the Redis of that kairos)")
	fs.StringVar(&apiURL, "url", "", "API URL of a running kairos on loopback, instead of starting one")
	fs.StringVar(&token, "token", "", "API token for --url (default $KAIROS_TOKEN)")
	fs.StringVar(&scenarios, "scenario", bench.DefaultScenarios, "scenarios: "+strings.Join(bench.Names, ", ")+", comma-separated, or all")
	fs.IntVar(&o.EnqueueJobs, "jobs", 100_000, "enqueue: jobs created each way")
	fs.IntVar(&o.Clients, "clients", 32, "concurrent API clients")
	fs.IntVar(&o.BatchSize, "batch-size", 1000, "jobs per batch create (the API allows 1000)")
	fs.IntVar(&o.Concurrency, "concurrency", 64, "consumers of the bench topic (its concurrency)")
	fs.IntVar(&o.PrecisionJobs, "precision-jobs", 20000, "precision, scale, sequence: jobs")
	fs.DurationVar(&o.PrecisionOver, "precision-over", 10*time.Second, "precision, scale, sequence: window the due times spread over")
	fs.IntVar(&o.BurstJobs, "burst-jobs", 20000, "burst, sequence: jobs due at one instant")
	fs.IntVar(&pending, "sequence-pending", 100_000, "sequence: jobs loaded pending an hour ahead for precision and the last burst; 0 loads none (they run on the store as it is)")
	fs.IntVar(&o.Cost.Jobs, "cost-jobs", 10000, "cost: jobs run through their life")
	fs.IntVar(&idleJobs, "idle-jobs", 1_000_000, "cost: jobs pending far ahead while idle commands are counted; 0 skips the idle count")
	fs.DurationVar(&o.Cost.IdleSettle, "idle-settle", 15*time.Second, "cost: wait after loading the idle jobs, and after each change of processes or topics")
	fs.DurationVar(&o.Cost.IdleWindow, "idle-window", 30*time.Second, "cost: idle window measured, for each of 1 and 3 processes with 1 and 100 topics")
	fs.StringVar(&rates, "sustained-rates", bench.DefaultSustainedRates, "sustained: jobs/s of each step, comma-separated, raised in order")
	fs.DurationVar(&o.Sustained.Step, "sustained-step", 20*time.Second, "sustained: how long each step lasts")
	fs.DurationVar(&o.Sustained.Lead, "sustained-lead", 500*time.Millisecond, "sustained: how long after its creation each job is due")
	fs.IntVar(&o.Scale.Jobs, "scale-jobs", 10_000_000, "scale: jobs loaded")
	fs.DurationVar(&o.Scale.MaxLoad, "scale-max-load", 10*time.Minute, "scale: loading stops after this long")
	fs.IntVar(&o.Schedules.Schedules, "schedules", 10_000, "schedules: schedules of the precision phase; 0 skips the phase")
	fs.DurationVar(&o.Schedules.Every, "schedules-every", time.Second, "schedules: interval of the precision phase's schedules")
	fs.DurationVar(&o.Schedules.Window, "schedules-window", 20*time.Second, "schedules: how long the precision phase's schedules fire")
	fs.IntVar(&o.Schedules.ScaleSchedules, "scale-schedules", 100_000, "schedules: schedules of the scale phase; 0 skips the phase")
	fs.DurationVar(&o.Schedules.ScaleEvery, "scale-schedules-every", time.Minute, "schedules: interval of the scale phase's schedules")
	fs.DurationVar(&o.Schedules.ScaleWindow, "scale-schedules-window", 2*time.Minute, "schedules: how long the scale phase's schedules fire")
	fs.BoolVar(&o.Schedules.Aligned, "schedules-aligned", false, "schedules: every schedule of a phase fires at the same instants (a burst each interval, as a cron pattern does) instead of spread over the interval")
	fs.IntVar(&o.TopicRate, "topic-rate", 0, "limit the bench topic to this many deliveries a second in every scenario (flow control; 0: none)")
	fs.IntVar(&o.Flow.Rate, "flow-rate", 500, "flow: the rate phase's limit a second (10 s of jobs at it, due at one instant)")
	fs.IntVar(&o.Flow.Parallelism, "flow-parallelism", 10, "flow: the parallelism phase's limit")
	fs.DurationVar(&o.Flow.Hold, "flow-hold", 100*time.Millisecond, "flow: how long the receiver holds each request in the parallelism phase")
	fs.IntVar(&o.Fanout.Subscriptions, "fanout-subscriptions", 10, "fanout: subscriptions every message matches")
	fs.IntVar(&o.Fanout.Rate, "fanout-rate", 200, "fanout: messages published a second")
	fs.DurationVar(&o.Fanout.Over, "fanout-over", 10*time.Second, "fanout: how long messages are published for")
	fs.DurationVar(&o.Fanout.Lead, "fanout-lead", time.Second, "fanout: how long before its run_at each message is published")
	fs.IntVar(&o.Fanout.Filtered, "fanout-filtered", 1000, "fanout: subscriptions with filters that no message of the matching phase matches")
	fs.IntVar(&o.Fanout.NoMatch, "fanout-nomatch", 1000, "fanout: messages of the matching phase")
	fs.IntVar(&o.Fanout.Pending, "fanout-pending", 2000, "fanout: messages published an hour ahead for the memory figures")
	fs.BoolVar(&o.Schedules.OneShot, "schedules-oneshot", true, "schedules: run one-shot jobs at each phase's rate beside it, over its window, created one per POST and then by batches, to compare")
	fs.DurationVar(&o.Lead, "lead", 0, "how long before the first due time a run starts being created (default: from the measured create rate)")
	fs.DurationVar(&o.Grace, "grace", 5*time.Second, "how long after the last due time missing callbacks are waited for")
	fs.DurationVar(&o.LifeTail, "life-tail", 0, "how long after the last delivery Redis CPU per job life goes on being counted (the work jobs leave behind; 60s in docs/performance.md); the sequence counts 60s unless this is given")
	fs.IntVar(&shards, "shards", 0, "Delay Bucket shards of the kairos run here (0: kairos's default)")
	fs.StringVar(&prefix, "prefix", "", "Redis key prefix of the kairos run here; must be unused (default: a fresh kbench-* prefix)")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "stop every scenario after this long (clean-up still runs)")
	fs.StringVar(&o.ColdStart.Binary, "kairos-bin", "bin/kairos", "the kairos binary run with --redis-url, and by coldstart (make build puts it in bin/kairos)")
	fs.IntVar(&o.ColdStart.Starts, "coldstart-starts", 20, "coldstart: starts measured")
	fs.BoolVar(&o.JSON, "json", false, "write one JSON document instead of tables")
	fs.StringVar(&o.ProfileDir, "cpuprofile", "", "directory for CPU profiles of this tool's process in each measured phase (<phase>.pprof); kairos runs in processes of its own")
	fs.StringVar(&logLvl, "log-level", "warn", "log level of the kairos processes run here (KAIROS_LOG_LEVEL)")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var err error
	if o.Scenarios, err = bench.ParseScenarios(scenarios); err != nil {
		return err
	}
	if o.Sustained.Rates, err = bench.ParseRates(rates); err != nil {
		return fmt.Errorf("--sustained-rates: %w", err)
	}
	if o.Sustained.Step <= 0 || o.Sustained.Lead <= 0 {
		return errors.New("--sustained-step and --sustained-lead: use durations above 0")
	}
	if o.BatchSize < 1 || o.BatchSize > 1000 {
		return errors.New("--batch-size: use 1 to 1000")
	}
	if o.Concurrency < 1 || o.Concurrency > 1000 {
		return errors.New("--concurrency: use 1 to 1000")
	}
	if err := checkSchedules(&o.Schedules); err != nil {
		return err
	}
	if idleJobs <= 0 {
		idleJobs = -1
	}
	o.Cost.IdleJobs = idleJobs
	o.Scale.PrecisionJobs, o.Scale.PrecisionOver = o.PrecisionJobs, o.PrecisionOver
	o.Sequence = sequenceConfig(fs, o, pending)
	if !quiet {
		o.Progress = stderr
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var t bench.Target
	switch {
	case apiURL != "":
		if token == "" {
			token = getenv("KAIROS_TOKEN")
		}
		if token == "" {
			return errors.New("--url needs --token or KAIROS_TOKEN")
		}
		if err := loopbackURL(apiURL); err != nil {
			return err
		}
		t = bench.Target{URL: apiURL, Token: token, Name: apiURL}
		if redisURL != "" {
			probe, err := redisClient(redisURL)
			if err != nil {
				return err
			}
			defer probe.Close()
			t.Redis = benchRedis{probe}
		}
	case redisURL != "":
		if prefix == "" {
			prefix = "kbench-" + randomHex(4)
		}
		switch logLvl {
		case "debug", "info", "warn", "error":
		default:
			return fmt.Errorf("--log-level %q: use debug, info, warn or error", logLvl)
		}
		k, err := startKairos(ctx, o.ColdStart.Binary, redisURL, prefix, shards, logLvl, stderr)
		if err != nil {
			return err
		}
		defer func() {
			if serr := k.stop(); serr != nil {
				fmt.Fprintln(stderr, "kairos-bench: clean up:", serr)
			}
		}()
		t = k.target
	default:
		fs.Usage()
		return errors.New("give --redis-url to run kairos here, or --url and --token to measure a running one")
	}
	return bench.Run(ctx, t, o, stdout)
}

// loopbackURL refuses an API URL off this machine: the bench's callbacks
// go to a loopback receiver, which only a kairos on this machine reaches.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http://127.0.0.1:PORT", raw)
	}
	if h := u.Hostname(); h != "localhost" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("--url %q: the bench runs on loopback only (its receiver must be reachable from kairos)", raw)
		}
	}
	return nil
}

// checkSchedules refuses settings of the schedules scenario the API would
// refuse, or that fire nothing, and marks a phase of 0 schedules skipped.
func checkSchedules(c *bench.SchedulesConfig) error {
	for _, ph := range []struct {
		flag          string
		n             *int
		every, window time.Duration
	}{{"--schedules", &c.Schedules, c.Every, c.Window}, {"--scale-schedules", &c.ScaleSchedules, c.ScaleEvery, c.ScaleWindow}} {
		switch {
		case *ph.n < 0:
			return fmt.Errorf("%s: use 0 or more", ph.flag)
		case *ph.n == 0:
			*ph.n = -1
		case ph.every < time.Second || ph.every%time.Millisecond != 0:
			return fmt.Errorf("%s-every %v: use whole milliseconds of at least 1s (the API's shortest interval)", ph.flag, ph.every)
		case ph.window < ph.every:
			return fmt.Errorf("%s-window %v: use at least the interval, %v", ph.flag, ph.window, ph.every)
		}
	}
	return nil
}

// sequenceConfig sizes the sequence from the shared flags: a --sequence-pending
// of 0 loads nothing, and --life-tail, when given, replaces its 60 s (0: none).
func sequenceConfig(fs *flag.FlagSet, o bench.Options, pending int) bench.SequenceConfig {
	c := bench.SequenceConfig{BurstJobs: o.BurstJobs, Pending: pending, PrecisionJobs: o.PrecisionJobs, PrecisionOver: o.PrecisionOver}
	if pending <= 0 {
		c.Pending = -1
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "life-tail" {
			c.LifeTail = o.LifeTail
			if o.LifeTail <= 0 {
				c.LifeTail = -1
			}
		}
	})
	return c
}

// usageOut is where the flag set writes the usage: stdout when the user
// asked for it with -h or --help, stderr when it follows a mistake.
func usageOut(args []string, stdout, stderr io.Writer) io.Writer {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return stdout
		case "--":
			return stderr
		}
	}
	return stderr
}

// lockedWriter serialises the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
