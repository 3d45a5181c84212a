package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Names of the scenarios, in the order "all" runs them.
var Names = []string{"sequence", "enqueue", "precision", "burst", "cost", "sustained", "scale", "schedules", "fanout", "coldstart", "flow"}

// DefaultScenarios run when none are named: the sequence, the realistic
// case of issue 44 (bursts on an empty store and behind a far job, then
// precision and a burst among 100,000 jobs pending an hour ahead).
const DefaultScenarios = "sequence"

// ParseScenarios reads a comma-separated list of names, or "all".
func ParseScenarios(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case n == "all":
			out = append(out, Names...)
		case slices.Contains(Names, n):
			out = append(out, n)
		default:
			return nil, fmt.Errorf("scenario %q: use %s or all", n, strings.Join(Names, ", "))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one scenario")
	}
	// In the order of Names, once each.
	var ordered []string
	for _, n := range Names {
		if slices.Contains(out, n) {
			ordered = append(ordered, n)
		}
	}
	return ordered, nil
}

// Options are a whole bench run.
type Options struct {
	Config
	Scenarios     []string
	Sequence      SequenceConfig
	EnqueueJobs   int           // default 100,000
	PrecisionJobs int           // default 20,000
	PrecisionOver time.Duration // default 10s
	BurstJobs     int           // default 20,000
	Cost          CostConfig
	Sustained     SustainedConfig
	Scale         ScaleConfig
	Schedules     SchedulesConfig
	Flow          FlowConfig
	Fanout        FanoutConfig
	ColdStart     ColdStartConfig
	JSON          bool // write one JSON document instead of tables
}

func (o Options) withDefaults() Options {
	o.Config = o.Config.withDefaults()
	if o.EnqueueJobs <= 0 {
		o.EnqueueJobs = 100_000
	}
	if o.PrecisionJobs <= 0 {
		o.PrecisionJobs = 20000
	}
	if o.PrecisionOver <= 0 {
		o.PrecisionOver = 10 * time.Second
	}
	if o.BurstJobs <= 0 {
		o.BurstJobs = 20000
	}
	o.Sequence = o.Sequence.withDefaults()
	o.Cost = o.Cost.withDefaults()
	o.Sustained = o.Sustained.withDefaults()
	o.Scale = o.Scale.withDefaults()
	o.Schedules = o.Schedules.withDefaults()
	o.Fanout = o.Fanout.withDefaults()
	return o
}

// Report is the JSON document of a run.
type Report struct {
	Target    string           `json:"target"`
	Started   time.Time        `json:"started"`
	CPUs      int              `json:"cpus"`
	GoVersion string           `json:"go_version"`
	Config    reportConfig     `json:"config"`
	Sequence  *SequenceResult  `json:"sequence,omitempty"`
	Enqueue   *EnqueueResult   `json:"enqueue,omitempty"`
	Precision *PrecisionResult `json:"precision,omitempty"`
	Burst     *BurstResult     `json:"burst,omitempty"`
	Cost      *CostResult      `json:"cost,omitempty"`
	Sustained *SustainedResult `json:"sustained,omitempty"`
	Scale     *ScaleResult     `json:"scale,omitempty"`
	Schedules *SchedulesResult `json:"schedules,omitempty"`
	Flow      *FlowResult      `json:"flow,omitempty"`
	Fanout    *FanoutResult    `json:"fanout,omitempty"`
	ColdStart *ColdStartResult `json:"coldstart,omitempty"`
	Errors    []string         `json:"errors,omitempty"`
}

type reportConfig struct {
	Clients     int `json:"clients"`
	BatchSize   int `json:"batch_size"`
	Concurrency int `json:"topic_concurrency"`
}

// Run runs the scenarios against t and writes their tables (or, with
// JSON, one document) to out as they finish. A failed scenario is
// reported and the next one runs; Run returns their errors joined. Every
// job the bench created is removed before it returns.
func Run(ctx context.Context, t Target, o Options, out io.Writer) error {
	o = o.withDefaults()
	rep := &Report{Target: t.Name, Started: time.Now().UTC(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Config: reportConfig{Clients: o.Clients, BatchSize: o.BatchSize, Concurrency: o.Concurrency}}
	b, err := New(ctx, t, o.Config)
	if err != nil {
		return err
	}
	if !o.JSON {
		fmt.Fprintf(out, "kairos bench against %s: %d CPUs, %d clients, batches of %d, topic concurrency %d\n\n",
			t.Name, rep.CPUs, o.Clients, o.BatchSize, o.Concurrency)
	}
	var errs []error
	for _, name := range o.Scenarios {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%s: not run: %w", name, context.Cause(ctx)))
			continue
		}
		b.progressf("%s: starting", name)
		var res interface{ Tables() []Table }
		var err error
		switch name {
		case "sequence":
			rep.Sequence, err = b.Sequence(ctx, o.Sequence)
			res = rep.Sequence
		case "enqueue":
			rep.Enqueue, err = b.Enqueue(ctx, o.EnqueueJobs)
			res = rep.Enqueue
		case "precision":
			rep.Precision, err = b.Precision(ctx, o.PrecisionJobs, o.PrecisionOver)
			res = rep.Precision
		case "burst":
			rep.Burst, err = b.Burst(ctx, o.BurstJobs)
			res = rep.Burst
		case "cost":
			rep.Cost, err = b.Cost(ctx, o.Cost)
			res = rep.Cost
		case "sustained":
			rep.Sustained, err = b.Sustained(ctx, o.Sustained)
			res = rep.Sustained
		case "scale":
			rep.Scale, err = b.Scale(ctx, o.Scale)
			res = rep.Scale
		case "schedules":
			rep.Schedules, err = b.Schedules(ctx, o.Schedules)
			res = rep.Schedules
		case "flow":
			rep.Flow, err = b.Flow(ctx, o.Flow)
			res = rep.Flow
		case "fanout":
			rep.Fanout, err = b.Fanout(ctx, o.Fanout)
			res = rep.Fanout
		case "coldstart":
			rep.ColdStart, err = b.ColdStart(ctx, o.ColdStart)
			res = rep.ColdStart
		}
		if err != nil {
			errs = append(errs, err)
			rep.Errors = append(rep.Errors, err.Error())
			b.progressf("%v", err)
		}
		if !o.JSON && err == nil {
			for _, tb := range res.Tables() {
				tb.Write(out)
			}
		}
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := b.Close(cctx); err != nil {
		errs = append(errs, fmt.Errorf("close: %w", err))
	}
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
