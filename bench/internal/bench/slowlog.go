package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlowlogEntry is one entry of Redis's slow log.
type SlowlogEntry struct {
	ID   int64
	USec int64    // Redis's own timing of the command; a script's includes what it ran
	Args []string // the command and its arguments as Redis keeps them (long ones cut)
	// Client is the client's address; Redis 7 gives the commands a script
	// runs with redis.call the address "?:0" and logs them just before the
	// script's own entry.
	Client     string
	ClientName string
}

// scriptClient is the slow log's client address of a command run by a script.
const scriptClient = "?:0"

// ClientName is the name the tool's own Redis client gives itself (CLIENT
// SETNAME), so that its commands are told apart in the slow log.
const ClientName = "kairos-bench"

// ScriptCosts is Redis's time per job by script and by top-level command,
// from Redis's slow log over a second pass of the cost scenario.
type ScriptCosts struct {
	Jobs int `json:"jobs"`
	// Rows are the scripts (largest first), then the other commands kairos sent.
	Rows    []ScriptCost `json:"rows"`
	Entries int          `json:"slowlog_entries"`
	// ScriptUSecPerJob is the scripts' slow log time per job, as logged;
	// StatsUSecPerJob is INFO commandstats' evalsha usec of the same pass:
	// the two agree when the slow log missed nothing.
	ScriptUSecPerJob float64 `json:"slowlog_script_usec_per_job"`
	StatsUSecPerJob  float64 `json:"commandstats_evalsha_usec_per_job"`
	// UnloggedUSecPerJob is evalsha usec per job in the first pass, when the
	// slow log was off. Logging each command a script runs costs Redis time
	// inside the script, so the rows, as logged, are higher by about
	// StatsUSecPerJob/UnloggedUSecPerJob (give or take run-to-run noise).
	UnloggedUSecPerJob float64 `json:"unlogged_evalsha_usec_per_job"`
	// TotalUSecPerJob is the sum of the rows: Redis's time in the commands
	// kairos sent, per job, as logged.
	TotalUSecPerJob float64  `json:"total_usec_per_job"`
	Delivery        Delivery `json:"delivery"`
	Notes           []string `json:"notes,omitempty"`
}

// ScriptCost is one script's (or top-level command's) share, as logged.
type ScriptCost struct {
	Name        string  `json:"name"` // the script's name, or the command's
	Script      bool    `json:"script"`
	CallsPerJob float64 `json:"calls_per_job"`
	USecPerCall float64 `json:"usec_per_call"`
	USecPerJob  float64 `json:"usec_per_job"`
	// For a script: the commands it ran with redis.call, per call, and
	// Redis's time in them; the rest of USecPerCall is the Lua around them
	// (and the slow log's own cost of logging them).
	CommandsPerCall     float64       `json:"commands_per_call,omitempty"`
	CommandsUSecPerCall float64       `json:"commands_usec_per_call,omitempty"`
	Commands            []CommandCost `json:"commands,omitempty"`
}

// CommandCost is one command a script runs.
type CommandCost struct {
	Command     string  `json:"command"`
	PerCall     float64 `json:"per_script_call"`
	USecPerCall float64 `json:"usec_per_script_call"`
}

// slowTally sums slow log entries.
type slowTally struct {
	calls, usec      int64
	inner, innerUSec int64                 // commands a script ran, and their time
	commands         map[string]*slowTally // those commands by name
}

func (t *slowTally) add(usec int64) { t.calls++; t.usec += usec }

// tally groups slow log entries into script calls, by script name, and
// top-level commands, by command name. Commands a script ran go with the
// script entry that follows them; the tool's
// own commands are left out. orphans counts commands of scripts whose
// entry is missing (the slow log dropped it).
func tally(entries []SlowlogEntry) (scripts, commands map[string]*slowTally, orphans int) {
	entries = slices.SortedFunc(slices.Values(entries), func(a, b SlowlogEntry) int { return cmp.Compare(a.ID, b.ID) })
	scripts, commands = map[string]*slowTally{}, map[string]*slowTally{}
	get := func(m map[string]*slowTally, k string) *slowTally {
		if m[k] == nil {
			m[k] = &slowTally{commands: map[string]*slowTally{}}
		}
		return m[k]
	}
	var inner []SlowlogEntry
	for _, e := range entries {
		if len(e.Args) == 0 {
			continue
		}
		if e.Client == scriptClient {
			inner = append(inner, e)
			continue
		}
		name := strings.ToLower(e.Args[0])
		script, ok := scriptName(name, e.Args)
		switch {
		case e.ClientName == ClientName || ownCommands[name] || strings.HasPrefix(name, "slowlog") || strings.HasPrefix(name, "config"):
		case ok:
			t := get(scripts, script)
			t.add(e.USec)
			for _, in := range inner {
				t.inner++
				t.innerUSec += in.USec
				get(t.commands, strings.ToLower(in.Args[0])).add(in.USec)
			}
			inner = inner[:0]
			continue
		default:
			get(commands, name).add(e.USec)
		}
		orphans += len(inner)
		inner = inner[:0]
	}
	return scripts, commands, orphans + len(inner)
}

// scriptName names the script an EVALSHA, EVAL or FCALL entry ran.
// kairos's scripts are functions of one library, named
// kairos_<12 hex digits of its version>_<script>: the script's name is read
// off the function's. A Redis without functions runs them by EVALSHA, whose
// SHA1 names no script here.
func scriptName(cmd string, args []string) (string, bool) {
	switch cmd {
	case "fcall", "fcall_ro":
		if len(args) < 2 {
			return "function ?", true
		}
		if n, ok := kairosFunction(args[1]); ok {
			return n, true
		}
		return "function " + args[1], true
	case "evalsha", "evalsha_ro":
		if len(args) < 2 {
			return "script ?", true
		}
		sha := strings.ToLower(args[1])
		return "sha " + sha[:min(8, len(sha))], true
	case "eval", "eval_ro":
		return "eval", true
	}
	return "", false
}

// kairosFunction returns the script a function of kairos's library runs.
func kairosFunction(fn string) (string, bool) {
	rest, ok := strings.CutPrefix(fn, "kairos_")
	if !ok || len(rest) < 14 || rest[12] != '_' {
		return "", false
	}
	for _, c := range rest[:12] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", false
		}
	}
	return rest[13:], true
}

// scriptCosts turns a pass's tallies into per-job rows.
func scriptCosts(scripts, commands map[string]*slowTally, jobs int) []ScriptCost {
	per := float64(max(jobs, 1))
	var rows []ScriptCost
	for name, t := range scripts {
		usec, calls := float64(t.usec), float64(t.calls)
		c := ScriptCost{Name: name, Script: true, CallsPerJob: calls / per, USecPerCall: usec / calls, USecPerJob: usec / per,
			CommandsPerCall: float64(t.inner) / calls, CommandsUSecPerCall: float64(t.innerUSec) / calls}
		for _, cn := range slices.Sorted(maps.Keys(t.commands)) {
			ct := t.commands[cn]
			c.Commands = append(c.Commands, CommandCost{Command: cn, PerCall: float64(ct.calls) / calls, USecPerCall: float64(ct.usec) / calls})
		}
		rows = append(rows, c)
	}
	for name, t := range commands {
		rows = append(rows, ScriptCost{Name: name, CallsPerJob: float64(t.calls) / per, USecPerCall: float64(t.usec) / float64(t.calls), USecPerJob: float64(t.usec) / per})
	}
	slices.SortFunc(rows, func(a, b ScriptCost) int {
		if a.Script != b.Script {
			if a.Script {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.USecPerJob, a.USecPerJob), cmp.Compare(a.Name, b.Name))
	})
	return rows
}

// errSlowlogRefused marks a Redis that would not let the tool turn the slow log up.
var errSlowlogRefused = errors.New("CONFIG SET refused")

// recordAll makes the slow log record every command until the returned
// restore runs, which puts both settings back and empties the log.
func (b *Bench) recordAll(ctx context.Context, maxLen int) (restore func(context.Context) error, err error) {
	r := b.t.Redis
	old := map[string]string{}
	for _, k := range []string{"slowlog-log-slower-than", "slowlog-max-len"} {
		if old[k], err = r.ConfigGet(ctx, k); err != nil {
			return nil, fmt.Errorf("%w: CONFIG GET %s: %v", errSlowlogRefused, k, err)
		}
	}
	restore = func(ctx context.Context) error {
		var errs []error
		for k, v := range old {
			if err := r.ConfigSet(ctx, k, v); err != nil {
				errs = append(errs, fmt.Errorf("restore %s %s: %w", k, v, err))
			}
		}
		return errors.Join(append(errs, r.SlowlogReset(ctx))...)
	}
	for _, kv := range [][2]string{{"slowlog-max-len", strconv.Itoa(maxLen)}, {"slowlog-log-slower-than", "0"}} {
		if err := r.ConfigSet(ctx, kv[0], kv[1]); err != nil {
			restore(ctx)
			return nil, fmt.Errorf("%w: CONFIG SET %s %s: %v", errSlowlogRefused, kv[0], kv[1], err)
		}
	}
	if err := r.SlowlogReset(ctx); err != nil {
		restore(ctx)
		return nil, err
	}
	return restore, nil
}

// scriptPass runs jobs through their life once more, like the cost
// scenario's first pass, with Redis's slow log recording every command, and
// breaks Redis's time down by script and command. unlogged is the first
// pass's evalsha usec per job. A Redis that refuses CONFIG SET (a managed
// one) gives a result with a note and no rows.
func (b *Bench) scriptPass(ctx context.Context, jobs int, unlogged float64) (*ScriptCosts, error) {
	r := &ScriptCosts{Jobs: jobs, UnloggedUSecPerJob: unlogged}
	// Each job life logs about 25 entries today; room for far more.
	maxLen := max(100_000, 64*jobs)
	restore, err := b.recordAll(ctx, maxLen)
	if errors.Is(err, errSlowlogRefused) {
		r.Notes = append(r.Notes, fmt.Sprintf("%v: no figures by script (a managed Redis may refuse); INFO commandstats above only", err))
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	defer func() {
		if restore != nil {
			if rerr := restore(cctx); rerr != nil {
				b.progressf("cost: slow log settings: %v", rerr)
			}
		}
	}()
	if err := b.t.Redis.ResetStat(ctx); err != nil {
		return nil, fmt.Errorf("CONFIG RESETSTAT: %w", err)
	}
	var entries []SlowlogEntry
	var statsUSec int64
	var readErr error
	f, err := b.fire(ctx, "cost", jobs, 0, costDue(jobs), time.Second, 1500*time.Millisecond, "cost-slowlog", func() {
		_, usec, ok := b.commandStats(ctx)
		if !ok {
			readErr = errors.New("read INFO commandstats")
			return
		}
		statsUSec = usec["evalsha"] + usec["eval"] + usec["fcall"]
		entries, readErr = b.t.Redis.Slowlog(ctx)
		if readErr == nil {
			readErr = restore(cctx)
			restore = nil
		}
	})
	r.Delivery = f.delivery
	if err == nil {
		err = readErr
	}
	if err != nil {
		return r, err
	}
	scripts, commands, orphans := tally(entries)
	r.Entries = len(entries)
	r.Rows = scriptCosts(scripts, commands, jobs)
	for _, row := range r.Rows {
		r.TotalUSecPerJob += row.USecPerJob
		if row.Script {
			r.ScriptUSecPerJob += row.USecPerJob
		}
	}
	r.StatsUSecPerJob = float64(statsUSec) / float64(jobs)
	if r.Entries >= maxLen {
		r.Notes = append(r.Notes, fmt.Sprintf("INCOMPLETE: the slow log filled up (%d entries); the oldest were dropped", r.Entries))
	}
	if orphans > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d commands run by scripts were logged without their script's entry", orphans))
	}
	return r, nil
}

// tables prints the figures by script, then the commands inside each script.
func (r *ScriptCosts) tables() []Table {
	t := Table{
		Title: fmt.Sprintf("cost: Redis time per job by script and command (slow log, a second pass of %s jobs)", fmtInt(int64(r.Jobs))),
		Head:  []string{"script or command", "calls/job", "µs/call", "µs/job", "redis.call/call", "in them µs/call", "Lua µs/call"},
	}
	if len(r.Rows) == 0 {
		t.Rows = [][]string{{"(none)"}}
	}
	var other ScriptCost // the commands too rare to show one by one
	var others int
	for _, c := range r.Rows {
		if !c.Script && c.CallsPerJob < 0.01 && c.USecPerJob < 0.01 {
			other.CallsPerJob += c.CallsPerJob
			other.USecPerJob += c.USecPerJob
			others++
			continue
		}
		row := []string{c.Name, f2(c.CallsPerJob), f2(c.USecPerCall), f2(c.USecPerJob)}
		if c.Script {
			row[0] += " (script)"
			row = append(row, f2(c.CommandsPerCall), f2(c.CommandsUSecPerCall), f2(c.USecPerCall-c.CommandsUSecPerCall))
		}
		t.Rows = append(t.Rows, row)
	}
	if others > 0 {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%d other commands", others), f2(other.CallsPerJob), "", f2(other.USecPerJob)})
	}
	if len(r.Rows) > 0 {
		t.Rows = append(t.Rows, []string{"TOTAL", "", "", f2(r.TotalUSecPerJob)})
		t.Notes = append(t.Notes,
			"each call's time is Redis's own timing, as the slow log recorded it with every command logged (CONFIG SET slowlog-log-slower-than 0, restored after); FCALL calls grouped by kairos's script; the commands kairos sent outside scripts below them",
			fmt.Sprintf("agreement: the scripts' slow log time %s µs/job, INFO commandstats evalsha usec of the same pass %s µs/job (%s)",
				f2(r.ScriptUSecPerJob), f2(r.StatsUSecPerJob), ratio(r.ScriptUSecPerJob, r.StatsUSecPerJob)),
			fmt.Sprintf("logging costs Redis time inside a script, per command it runs: evalsha took %s µs/job in this pass, %s µs/job in the first pass with the slow log off (%s, run-to-run noise included); the figures here are as logged",
				f2(r.StatsUSecPerJob), f2(r.UnloggedUSecPerJob), ratio(r.StatsUSecPerJob, r.UnloggedUSecPerJob)),
			"redis.call/call and in them µs/call: the commands each script call ran and Redis's time in them; Lua µs/call is the rest: the interpreter, cjson, argument handling, and logging those commands",
			"scripts shown as \"function ...\" are not kairos's; \"sha ...\" are scripts run by EVALSHA (kairos uses them where Redis has no functions); \"eval\" is a script sent as text after a NOSCRIPT")
		t.Notes = append(t.Notes, "these times (like commandstats usec) are wall-clock inside Redis: on a machine where CPU was waited for they include time Redis was not running, so they may add up to more than INFO's CPU time")
	}
	t.Notes = append(t.Notes, r.Notes...)
	out := []Table{t}
	inside := Table{Title: "cost: commands inside each script, per script call", Head: []string{"script", "command", "per call", "µs/call"}, Left: []int{1}}
	for _, c := range r.Rows {
		for i, cc := range c.Commands {
			name := ""
			if i == 0 {
				name = c.Name
			}
			inside.Rows = append(inside.Rows, []string{name, cc.Command, f2(cc.PerCall), f2(cc.USecPerCall)})
		}
	}
	if len(inside.Rows) > 0 {
		out = append(out, inside)
	}
	return out
}

// ratio prints a/b as a percentage, such as "98.5%".
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(100*a/b, 'f', 1, 64) + "%"
}
