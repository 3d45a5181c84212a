package bench

import (
	"context"
	"maps"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Redis reads the figures of the Redis that kairos runs on. cmd/kairos-bench
// fills it with a go-redis client kept apart from kairos's own, so that the
// bench's reads are not counted as kairos's commands.
type Redis interface {
	// Info returns the text of INFO section.
	Info(ctx context.Context, section string) (string, error)
	// ResetStat runs CONFIG RESETSTAT.
	ResetStat(ctx context.Context) error
	// Time returns Redis's clock (TIME).
	Time(ctx context.Context) (time.Time, error)
	// ConfigGet returns a server setting (CONFIG GET).
	ConfigGet(ctx context.Context, name string) (string, error)
	// ConfigSet changes a server setting (CONFIG SET); a managed Redis may refuse.
	ConfigSet(ctx context.Context, name, value string) error
	// Slowlog returns every entry of the slow log (SLOWLOG GET -1).
	Slowlog(ctx context.Context) ([]SlowlogEntry, error)
	// SlowlogReset empties the slow log (SLOWLOG RESET).
	SlowlogReset(ctx context.Context) error
}

// parseInfo reads INFO's "name:value" lines.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// parseCommandStats reads INFO commandstats into calls per command, such as
// "evalsha" or "config|resetstat". Redis counts the commands that scripts
// run with redis.call too, under their own names.
func parseCommandStats(s string) map[string]int64 { return commandStat(s, "calls=") }

// parseCommandUsec reads INFO commandstats into the microseconds Redis spent
// per command. A script call's time includes the commands it runs.
func parseCommandUsec(s string) map[string]int64 { return commandStat(s, "usec=") }

// commandStat reads one "field=" of every cmdstat_ line of INFO commandstats.
func commandStat(s, field string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range parseInfo(s) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(f, field); ok {
				c, _ := strconv.ParseInt(n, 10, 64)
				out[name] = c
			}
		}
	}
	return out
}

// ownCommands are the bench's own reads, left out of kairos's counts.
var ownCommands = map[string]bool{"info": true, "config|resetstat": true, "time": true,
	"config|get": true, "config|set": true, "slowlog|get": true, "slowlog|reset": true}

// CommandCount is one command's share.
type CommandCount struct {
	Command  string  `json:"command"`
	Executed float64 `json:"executed"`   // as Redis counts: inside scripts included
	USec     float64 `json:"redis_usec"` // Redis's time in the command (a script's includes its commands)
}

// commandTable turns executed counts and times, each divided by div, into rows,
// largest first, leaving out the bench's own commands.
func commandTable(executed, usec map[string]int64, div float64) (rows []CommandCount, exTotal float64) {
	for n := range executed {
		if ownCommands[n] {
			continue
		}
		c := CommandCount{Command: n, Executed: float64(executed[n]) / div, USec: float64(usec[n]) / div}
		exTotal += c.Executed
		rows = append(rows, c)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Executed != rows[j].Executed {
			return rows[i].Executed > rows[j].Executed
		}
		return rows[i].Command < rows[j].Command
	})
	return rows, exTotal
}

func (b *Bench) info(ctx context.Context, section string) (map[string]string, bool) {
	if b.t.Redis == nil {
		return nil, false
	}
	s, err := b.t.Redis.Info(ctx, section)
	if err != nil {
		b.progressf("redis INFO %s: %v", section, err)
		return nil, false
	}
	return parseInfo(s), true
}

// usedMemory returns INFO memory's used_memory.
func (b *Bench) usedMemory(ctx context.Context) (int64, bool) {
	m, ok := b.info(ctx, "memory")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(m["used_memory"], 10, 64)
	return n, err == nil
}

// settleMemory waits (up to 30s) until Redis has freed what UNLINK handed
// to its background thread, so that the next memory baseline is true.
func (b *Bench) settleMemory(ctx context.Context) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m, ok := b.info(ctx, "memory")
		if !ok || m["lazyfree_pending_objects"] == "0" || m["lazyfree_pending_objects"] == "" {
			return
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// commandStats returns INFO commandstats as calls and microseconds per command.
func (b *Bench) commandStats(ctx context.Context) (calls, usec map[string]int64, ok bool) {
	if b.t.Redis == nil {
		return nil, nil, false
	}
	s, err := b.t.Redis.Info(ctx, "commandstats")
	if err != nil {
		return nil, nil, false
	}
	return parseCommandStats(s), parseCommandUsec(s), true
}

// clockOffset measures Redis's clock minus the local one (best of three).
func (b *Bench) clockOffset(ctx context.Context) time.Duration {
	if b.t.Redis == nil {
		return 0
	}
	best, off := time.Duration(1<<62), time.Duration(0)
	for range 5 {
		t0 := time.Now()
		rt, err := b.t.Redis.Time(ctx)
		if err != nil {
			return 0
		}
		if rtt := time.Since(t0); rtt < best {
			best, off = rtt, rt.Sub(t0.Add(rtt/2))
		}
	}
	return off
}

// Usage is CPU use over a phase, in percent of one core.
type Usage struct {
	ProcessPct float64 `json:"process_cpu_pct"` // this process and the kairos process it runs
	RedisPct   float64 `json:"redis_cpu_pct,omitempty"`
	// RedisSeconds is the growth of Redis's used_cpu_user+used_cpu_sys:
	// everything Redis did meanwhile, whoever asked.
	RedisSeconds float64 `json:"redis_cpu_seconds,omitempty"`
	Redis        bool    `json:"-"`
	// StallPct is the share of the phase in which some task on this machine
	// (any process's) was runnable but waited for a CPU (Linux PSI).
	StallPct float64 `json:"cpu_stall_pct,omitempty"`
	Seconds  float64 `json:"seconds"` // the phase measured
	// ScriptSeconds and ScriptCalls are the growth of Redis's time in
	// script calls (INFO commandstats usec of FCALL, FCALL_RO, EVAL and
	// EVALSHA, the commands they run included) and of their number. The
	// rest of RedisSeconds is the other commands, reading and writing
	// sockets, and Redis's own background work.
	ScriptSeconds float64 `json:"redis_script_seconds,omitempty"`
	ScriptCalls   int64   `json:"redis_script_calls,omitempty"`
	Scripts       bool    `json:"-"`
	// Counters are the growth of the target's counters and of this
	// process's GC figures over the phase.
	Counters map[string]int64 `json:"counters,omitempty"`
}

type cpuMark struct {
	wall     time.Time
	proc     time.Duration
	redis    float64
	ok       bool
	counters map[string]int64
	stall    time.Duration // machine-wide CPU pressure: time some task waited for a CPU
	// scriptUS and scriptCalls sum the script commands of INFO commandstats.
	scriptUS, scriptCalls int64
	scriptsOK             bool
}

// scriptCommands are the commands that run a script: their commandstats
// time includes the commands the script runs.
var scriptCommands = []string{"fcall", "fcall_ro", "evalsha", "eval", "evalsha_ro", "eval_ro"}

func (b *Bench) mark(ctx context.Context) cpuMark {
	m := cpuMark{wall: time.Now(), proc: b.processCPU(), counters: b.counters(), stall: cpuStall()}
	if in, ok := b.info(ctx, "cpu"); ok {
		u, err1 := strconv.ParseFloat(in["used_cpu_user"], 64)
		s, err2 := strconv.ParseFloat(in["used_cpu_sys"], 64)
		m.redis, m.ok = u+s, err1 == nil && err2 == nil
	}
	if calls, usec, ok := b.commandStats(ctx); ok {
		m.scriptsOK = true
		for _, c := range scriptCommands {
			m.scriptUS += usec[c]
			m.scriptCalls += calls[c]
		}
	}
	return m
}

func (b *Bench) usage(ctx context.Context, m cpuMark) Usage {
	now := b.mark(ctx)
	wall := now.wall.Sub(m.wall).Seconds()
	if wall <= 0 {
		return Usage{}
	}
	u := Usage{ProcessPct: 100 * (now.proc - m.proc).Seconds() / wall, Seconds: wall, Counters: map[string]int64{}}
	for k, v := range now.counters {
		u.Counters[k] = v - m.counters[k]
	}
	if m.ok && now.ok {
		u.Redis, u.RedisSeconds = true, now.redis-m.redis
		u.RedisPct = 100 * u.RedisSeconds / wall
	}
	// a CONFIG RESETSTAT in between would make the growth negative
	if m.scriptsOK && now.scriptsOK && now.scriptUS >= m.scriptUS && now.scriptCalls >= m.scriptCalls {
		u.Scripts, u.ScriptSeconds, u.ScriptCalls = true, float64(now.scriptUS-m.scriptUS)/1e6, now.scriptCalls-m.scriptCalls
	}
	if m.stall > 0 && now.stall > 0 {
		u.StallPct = 100 * (now.stall - m.stall).Seconds() / wall
	}
	return u
}

// redisUSPerJob is Redis's CPU time over the phase divided by jobs, in
// microseconds; 0 when Redis's figures are unknown.
func (u Usage) redisUSPerJob(jobs int) float64 {
	if !u.Redis || jobs <= 0 {
		return 0
	}
	return u.RedisSeconds * 1e6 / float64(jobs)
}

// plus adds v's Redis time to u's: the work of two windows together. The
// percentages stay u's.
func (u Usage) plus(v Usage) Usage {
	u.Redis, u.Scripts = u.Redis && v.Redis, u.Scripts && v.Scripts
	u.RedisSeconds += v.RedisSeconds
	u.ScriptSeconds += v.ScriptSeconds
	u.ScriptCalls += v.ScriptCalls
	return u
}

// scriptUSPerJob is Redis's time in script calls over the phase divided
// by jobs, in microseconds; 0 when unknown.
func (u Usage) scriptUSPerJob(jobs int) float64 {
	if !u.Scripts || jobs <= 0 {
		return 0
	}
	return u.ScriptSeconds * 1e6 / float64(jobs)
}

// cpuStall returns the machine's CPU pressure so far: the time during which
// at least one runnable task waited for a CPU (Linux PSI, "some"); 0 if unknown.
func cpuStall() time.Duration {
	raw, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	_, total, ok := strings.Cut(line, "total=")
	if !ok {
		return 0
	}
	us, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// processCPU is the CPU time of this process and of the target's kairos
// process, when known.
func (b *Bench) processCPU() time.Duration {
	d := processCPU()
	if b.t.ProcessCPU != nil {
		d += b.t.ProcessCPU()
	}
	return d
}

// counters are the target's counters plus this process's garbage collector's.
func (b *Bench) counters() map[string]int64 {
	out := map[string]int64{}
	if b.t.Counters != nil {
		maps.Copy(out, b.t.Counters())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out["gc_cycles"] = int64(ms.NumGC)
	out["gc_pause_us"] = int64(ms.PauseTotalNs / 1e3)
	return out
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
