package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// CostResult is the cost scenario: Redis commands over a job's whole life
// (create, claim, fire, ack), and per second when nothing is due.
type CostResult struct {
	Jobs     int      `json:"jobs"`
	Seconds  float64  `json:"seconds"`
	Delivery Delivery `json:"delivery"`
	// ExecutedPerJob counts as Redis does (INFO commandstats): commands run
	// by scripts count one by one, the EVALSHA itself once more.
	ExecutedPerJob float64        `json:"executed_per_job"`
	ByCommand      []CommandCount `json:"by_command"`
	// CPU per job over the jobs' whole life (the window of the precision
	// and burst figures), in microseconds: Redis's, and the processes'
	// (the tool, and the kairos it runs).
	RedisCPUPerJobUS   float64 `json:"redis_cpu_per_job_us,omitempty"`
	ProcessCPUPerJobUS float64 `json:"process_cpu_per_job_us"`
	Life               Usage   `json:"cpu_life"`
	// ByScript is Redis's time by script and command, from a second pass
	// with the slow log on.
	ByScript *ScriptCosts `json:"by_script,omitempty"`
	Idle     *IdleResult  `json:"idle,omitempty"`
	Checks   []Check      `json:"checks"`
}

// IdleResult is Redis's load while nothing is due. The top-level figures
// are those of one process and the bench's one topic; Cells has every
// combination measured.
type IdleResult struct {
	Pending        int            `json:"pending"`
	WindowSeconds  float64        `json:"window_seconds"`
	ExecutedPerSec float64        `json:"executed_per_sec"`
	ByCommand      []CommandCount `json:"by_command"`
	Cells          []IdleCell     `json:"cells"`
}

// IdleCell is the idle load of some kairos processes with some topics.
type IdleCell struct {
	Processes      int            `json:"processes"`
	Topics         int            `json:"topics"`
	ExecutedPerSec float64        `json:"executed_per_sec"`
	ExecutedPerDay float64        `json:"executed_per_day"`
	ByCommand      []CommandCount `json:"by_command"`
}

// idleTopics is the topic count of the many-topics cells.
const idleTopics = 100

// CostConfig sizes the cost scenario.
type CostConfig struct {
	Jobs       int           // jobs run through their life; default 10,000
	IdleJobs   int           // jobs pending far ahead during the idle measurement; default 1,000,000; <0 skips it
	IdleSettle time.Duration // wait after loading them, and after each change of processes or topics; default 15s
	IdleWindow time.Duration // measured window of each cell; default 30s
}

func (c CostConfig) withDefaults() CostConfig {
	if c.Jobs <= 0 {
		c.Jobs = 10000
	}
	if c.IdleJobs == 0 {
		c.IdleJobs = 1_000_000
	}
	if c.IdleSettle <= 0 {
		c.IdleSettle = 15 * time.Second
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = 30 * time.Second
	}
	return c
}

var errNoRedis = errors.New("needs access to kairos's Redis: give --redis-url")

func diff(after, before map[string]int64) map[string]int64 {
	if after == nil {
		return nil
	}
	out := make(map[string]int64, len(after))
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Cost runs the cost scenario.
func (b *Bench) Cost(ctx context.Context, c CostConfig) (*CostResult, error) {
	if b.t.Redis == nil {
		return nil, fmt.Errorf("cost: %w", errNoRedis)
	}
	c = c.withDefaults()
	r := &CostResult{Jobs: c.Jobs}
	if err := b.t.Redis.ResetStat(ctx); err != nil {
		return nil, fmt.Errorf("cost: CONFIG RESETSTAT: %w", err)
	}
	var measureErr error
	var evalUSec int64
	// The settle lets the last acks and the stats recorder's flush land.
	f, err := b.fire(ctx, "cost", c.Jobs, 0, costDue(c.Jobs), time.Second, 1500*time.Millisecond, "cost", func() {
		ex, usec, ok := b.commandStats(ctx)
		if !ok {
			measureErr = errors.New("read INFO commandstats")
			return
		}
		evalUSec = usec["evalsha"] + usec["eval"] + usec["fcall"]
		r.ByCommand, r.ExecutedPerJob = commandTable(ex, usec, float64(c.Jobs))
	})
	r.Delivery, r.Life, r.Seconds = f.delivery, f.life, f.life.Seconds
	r.RedisCPUPerJobUS = f.life.redisUSPerJob(c.Jobs)
	r.ProcessCPUPerJobUS = f.life.ProcessPct / 100 * f.life.Seconds * 1e6 / float64(c.Jobs)
	if err == nil {
		err = measureErr
	}
	if err != nil {
		return r, fmt.Errorf("cost: %w", err)
	}
	r.Checks = []Check{atMost("commands per job life", r.ExecutedPerJob, 12, "")}
	b.progressf("cost: once more with the slow log recording every command, for the figures by script")
	if r.ByScript, err = b.scriptPass(ctx, c.Jobs, float64(evalUSec)/float64(c.Jobs)); err != nil {
		return r, fmt.Errorf("cost: by script: %w", err)
	}
	if c.IdleJobs > 0 {
		idle, err := b.idle(ctx, c)
		r.Idle = idle
		if err != nil {
			return r, fmt.Errorf("cost: idle: %w", err)
		}
		for _, cell := range idle.Cells {
			r.Checks = append(r.Checks, atMost(fmt.Sprintf("commands per second idle, %d process(es), %d topic(s)", cell.Processes, cell.Topics),
				cell.ExecutedPerSec, float64(cell.Processes), "/s"))
		}
	}
	return r, nil
}

// costDue spreads the cost scenario's jobs over one second, so that the
// scanner claims in ordinary passes.
func costDue(jobs int) func(i int) time.Duration {
	return func(i int) time.Duration { return time.Duration(int64(time.Second) * int64(i) / int64(jobs)) }
}

// idle loads jobs far ahead, waits for the steady state and counts the
// commands of a window in which nothing is due: for one kairos process and
// three (when the target can start more), each with the bench's one topic
// and with idleTopics topics.
func (b *Bench) idle(ctx context.Context, c CostConfig) (*IdleResult, error) {
	base := b.now().Add(24 * time.Hour).UnixMilli()
	s := b.newSpec("idle", func(i int) int64 { return base + int64(i)*7919%3_600_000 })
	r := &IdleResult{Pending: c.IdleJobs, WindowSeconds: c.IdleWindow.Seconds()}
	l, err := b.load(ctx, s, c.IdleJobs, b.cfg.BatchSize, loadOpts{progress: func(n int, d time.Duration) {
		b.progressf("cost: loaded %d of %d idle jobs in %v", n, c.IdleJobs, d.Round(time.Second))
	}})
	var topics []string
	var stops []func()
	cleanup := func() error {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		for _, stop := range stops {
			stop()
		}
		stops = nil
		var first error
		for _, t := range topics {
			if err := b.api.DeleteTopic(cctx, t); err != nil && first == nil {
				first = fmt.Errorf("delete topic %s: %w", t, err)
			}
		}
		topics = nil
		if err := b.drop(cctx, s, c.IdleJobs, nil); err != nil && first == nil {
			first = err
		}
		return first
	}
	if err == nil {
		b.progressf("cost: %d jobs pending far ahead (loaded in %.1fs)", l.Created, l.Elapsed.Seconds())
	}
	measure := func(procs, ntopics int) error {
		b.progressf("cost: idle with %d process(es) and %d topic(s): settling %v, then measuring %v", procs, ntopics, c.IdleSettle, c.IdleWindow)
		sleep(ctx, c.IdleSettle)
		if err := b.t.Redis.ResetStat(ctx); err != nil {
			return err
		}
		sleep(ctx, c.IdleWindow)
		if err := ctx.Err(); err != nil {
			return err
		}
		ex, usec, ok := b.commandStats(ctx)
		if !ok {
			return errors.New("read INFO commandstats")
		}
		cell := IdleCell{Processes: procs, Topics: ntopics}
		cell.ByCommand, cell.ExecutedPerSec = commandTable(ex, usec, c.IdleWindow.Seconds())
		cell.ExecutedPerDay = cell.ExecutedPerSec * 86400
		r.Cells = append(r.Cells, cell)
		if procs == 1 && ntopics == 1 {
			r.ByCommand, r.ExecutedPerSec = cell.ByCommand, cell.ExecutedPerSec
		}
		return nil
	}
	addTopics := func() error {
		for i := len(topics) + 1; i < idleTopics; i++ {
			name := fmt.Sprintf("%s-idle-%03d", b.topic, i)
			if _, _, err := b.api.PutTopic(ctx, name, client.TopicRequest{CallbackURL: b.rec.URL}); err != nil {
				return fmt.Errorf("put topic %s: %w", name, err)
			}
			topics = append(topics, name)
		}
		return nil
	}
	dropTopics := func() error {
		for _, t := range topics {
			if err := b.api.DeleteTopic(ctx, t); err != nil {
				return fmt.Errorf("delete topic %s: %w", t, err)
			}
		}
		topics = nil
		return nil
	}
	steps := []func() error{
		func() error { return measure(1, 1) },
		addTopics,
		func() error { return measure(1, idleTopics) },
	}
	if b.t.StartProcess != nil {
		steps = append(steps,
			func() error {
				for range 2 {
					stop, err := b.t.StartProcess(ctx)
					if err != nil {
						return fmt.Errorf("start another kairos process: %w", err)
					}
					stops = append(stops, stop)
				}
				return nil
			},
			func() error { return measure(3, idleTopics) },
			dropTopics,
			func() error { return measure(3, 1) })
	}
	for _, step := range steps {
		if err != nil {
			break
		}
		err = step()
	}
	if cerr := cleanup(); cerr != nil && err == nil {
		err = fmt.Errorf("clean up: %w", cerr)
	}
	slices.SortFunc(r.Cells, func(a, b IdleCell) int { return cmp.Or(a.Processes-b.Processes, a.Topics-b.Topics) })
	return r, err
}

// Tables prints the result.
func (r *CostResult) Tables() []Table {
	var lifeCheck Check
	if len(r.Checks) > 0 {
		lifeCheck = r.Checks[0]
	}
	life := Table{
		Title: fmt.Sprintf("cost: Redis commands per job over its life (create, claim, fire, ack), %s jobs", fmtInt(int64(r.Jobs))),
		Head:  []string{"command", "executed/job", "redis µs/job"},
	}
	for _, c := range r.ByCommand {
		life.Rows = append(life.Rows, []string{c.Command, f2(c.Executed), f2(c.USec)})
	}
	life.Rows = append(life.Rows, []string{"TOTAL", f2(r.ExecutedPerJob), ""},
		[]string{"Redis CPU per job life (INFO)", "", f2(r.RedisCPUPerJobUS)})
	life.Notes = []string{
		"executed: INFO commandstats after CONFIG RESETSTAT; Redis 7 counts each redis.call inside a script under its own name, plus the EVALSHA itself",
		fmt.Sprintf("target: <= 12 commands per job life: executed %s -> %s", f2(r.ExecutedPerJob), lifeCheck.verdict()),
		"redis µs/job: Redis's time in the command (INFO commandstats usec); an EVALSHA's includes the commands its script runs",
		fmt.Sprintf("CPU per job life: Redis %s µs, processes %s µs (the tool, and the kairos it runs) over %.1f s (%s)",
			f2(r.RedisCPUPerJobUS), f2(r.ProcessCPUPerJobUS), r.Life.Seconds, fmtCPU(r.Life)),
		lifeWindow,
		fmt.Sprintf("delivered %d of %d, missing %d, duplicated %d, early %d", r.Delivery.Delivered, r.Delivery.Jobs, r.Delivery.Missing, r.Delivery.Duplicated, r.Delivery.Early),
	}
	out := []Table{life}
	if r.ByScript != nil {
		out = append(out, r.ByScript.tables()...)
	}
	if r.Idle != nil {
		out = append(out, r.Idle.tables(r.Checks)...)
	}
	return out
}

// tables prints the idle figures: commands per second and per day by
// processes and topics, then the commands of one process with one topic.
func (r *IdleResult) tables(checks []Check) []Table {
	cells := Table{
		Title: fmt.Sprintf("cost: idle Redis commands with nothing due, %s jobs pending far ahead (%gs window each)", fmtInt(int64(r.Pending)), r.WindowSeconds),
		Head:  []string{"processes", "topics", "executed/s", "executed/day", "target", ""},
	}
	for _, c := range r.Cells {
		verdict := ""
		for _, ch := range checks {
			if ch.Metric == fmt.Sprintf("commands per second idle, %d process(es), %d topic(s)", c.Processes, c.Topics) {
				verdict = ch.verdict()
			}
		}
		cells.Rows = append(cells.Rows, []string{strconv.Itoa(c.Processes), strconv.Itoa(c.Topics), f2(c.ExecutedPerSec),
			fmtInt(int64(math.Round(c.ExecutedPerDay))), fmt.Sprintf("<= %d/s", c.Processes), verdict})
	}
	cells.Notes = []string{
		"executed: INFO commandstats after CONFIG RESETSTAT, each redis.call inside a script counted; every kairos process runs every role (API, scanner, worker)",
		"at $0.20 per 100,000 commands, 1 command/s is about $5.18 a month (2.59M commands)",
	}
	if len(r.Cells) < 4 {
		cells.Notes = append(cells.Notes, "3 processes: only for a kairos this tool starts (--redis-url without --url)")
	}
	one := Table{
		Title: "cost: idle Redis commands by command, one process, one topic",
		Head:  []string{"command", "executed/s"},
	}
	for _, c := range r.ByCommand {
		one.Rows = append(one.Rows, []string{c.Command, f2(c.Executed)})
	}
	one.Rows = append(one.Rows, []string{"TOTAL", f2(r.ExecutedPerSec)})
	return []Table{cells, one}
}

func f2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
