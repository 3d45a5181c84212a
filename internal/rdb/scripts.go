package rdb

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts are the prelude layout.go generates, the shared helpers, then
// each script's body. On a Redis with functions (7.0 and later) they are
// one function library, loaded once and called with FCALL: the prelude and
// helpers are set up when the library loads, not on every call, which made
// a call about half as dear as by EVALSHA (docs/performance.md).
// Elsewhere (the embedded Redis) each runs with EVALSHA. Every script
// touches keys of one slot.
var (
	//go:embed lua/job.lua
	jobSrc string // records, the timing wheel, counters and the clock
	//go:embed lua/index.lua
	indexSrc string // the listing index
	//go:embed lua/sched.lua
	schedSrc string // schedules and their occurrences
	//go:embed lua/ops.lua
	opsSrc string // a tenant's slots for bulk operations
	//go:embed lua/flow.lua
	flowSrc string // flow control's calendar and waiting set (flowpace.lua, flowgate.lua)

	//go:embed lua/enqueue.lua
	enqueueSrc string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/cancel.lua
	cancelSrc string
	//go:embed lua/reschedule.lua
	rescheduleSrc string
	//go:embed lua/replay.lua
	replaySrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/unindex.lua
	unindexSrc string
	//go:embed lua/handle.lua
	handleSrc string
	//go:embed lua/undead.lua
	undeadSrc string
	//go:embed lua/schedset.lua
	schedsetSrc string
	//go:embed lua/scheddel.lua
	scheddelSrc string
	//go:embed lua/schedrefill.lua
	schedrefillSrc string
	//go:embed lua/schedmark.lua
	schedmarkSrc string
	//go:embed lua/unpark.lua
	unparkSrc string
	//go:embed lua/flowpace.lua
	flowpaceSrc string
	//go:embed lua/flowgate.lua
	flowgateSrc string
	//go:embed lua/breaker.lua
	breakerSrc string
	//go:embed lua/outcome.lua
	outcomeSrc string
	//go:embed lua/start.lua
	startSrc string
	//go:embed lua/lock.lua
	lockSrc string

	enqueueScript     = newScript("enqueue", enqueueSrc)
	claimScript       = newScript("claim", claimSrc, allowOOM)
	cancelScript      = newScript("cancel", cancelSrc, allowOOM)
	rescheduleScript  = newScript("reschedule", rescheduleSrc)
	replayScript      = newScript("replay", replaySrc)
	releaseScript     = newScript("release", releaseSrc, allowOOM)
	unindexScript     = newScript("unindex", unindexSrc, allowOOM)
	handleScript      = newScript("handle", handleSrc)
	undeadScript      = newScript("undead", undeadSrc, allowOOM)
	schedsetScript    = newScript("schedset", schedsetSrc)
	scheddelScript    = newScript("scheddel", scheddelSrc, allowOOM)
	schedrefillScript = newScript("schedrefill", schedrefillSrc)
	schedmarkScript   = newScript("schedmark", schedmarkSrc)
	unparkScript      = newScript("unpark", unparkSrc)
	flowpaceScript    = newScript("flowpace", flowpaceSrc, allowOOM)
	flowgateScript    = newScript("flowgate", flowgateSrc, allowOOM)
	breakerScript     = newScript("breaker", breakerSrc, allowOOM)
	outcomeScript     = newScript("outcome", outcomeSrc, allowOOM)
	startScript       = newScript("start", startSrc, allowOOM)
	lockScript        = newScript("lock", lockSrc, allowOOM)
)

// allowOOM marks a script that Redis runs even when it is out of memory
// (maxmemory reached): one that finishes or removes work, so that
// deliveries, cancels and releases go on, and memory is freed, while new
// work is refused. Redis refuses every other script before it starts, so a
// refused call writes nothing. (The flag applies to the function library;
// the embedded Redis has no maxmemory.)
const allowOOM = true

// The scripts of topic deletion, tenant quotas and revoked tokens, in a
// block of their own.
var (
	//go:embed lua/topicretire.lua
	topicretireSrc string
	//go:embed lua/topicdel.lua
	topicdelSrc string
	//go:embed lua/quota.lua
	quotaSrc string
	//go:embed lua/tenantpending.lua
	tenantpendingSrc string
	//go:embed lua/revoke.lua
	revokeSrc string

	topicretireScript   = newScript("topicretire", topicretireSrc)
	topicdelScript      = newScript("topicdel", topicdelSrc)
	quotaScript         = newScript("quota", quotaSrc)
	tenantpendingScript = newScript("tenantpending", tenantpendingSrc)
	// a revocation goes through while Redis is out of memory: it is one field
	revokeScript = newScript("revoke", revokeSrc, allowOOM)
)

// The backfill of a schedule, in a block of its own.
var (
	//go:embed lua/schedfill.lua
	schedfillSrc string

	schedfillScript = newScript("schedfill", schedfillSrc)
)

// The scripts of labels and bulk operations.
var (
	//go:embed lua/labelunindex.lua
	labelunindexSrc string

	//go:embed lua/opnew.lua
	opnewSrc string
	//go:embed lua/opadopt.lua
	opadoptSrc string
	//go:embed lua/opstep.lua
	opstepSrc string

	labelunindexScript = newScript("labelunindex", labelunindexSrc, allowOOM)
	opnewScript        = newScript("opnew", opnewSrc)
	// a running operation goes on while Redis is out of memory: it frees it
	opadoptScript = newScript("opadopt", opadoptSrc, allowOOM)
	opstepScript  = newScript("opstep", opstepSrc, allowOOM)
)

// The scripts of fan-out: a subscription's pause, its parked deliveries
// and its counts.
var (
	//go:embed lua/subpause.lua
	subpauseSrc string
	//go:embed lua/subpark.lua
	subparkSrc string
	//go:embed lua/subcount.lua
	subcountSrc string

	subpauseScript = newScript("subpause", subpauseSrc)
	// parking frees the wheel of a paused subscription's due work
	subparkScript = newScript("subpark", subparkSrc, allowOOM)
	// counts move as deliveries end, whose outcomes free memory
	subcountScript = newScript("subcount", subcountSrc, allowOOM)
)

// helpersSrc is what every script body runs after.
var helpersSrc = luaPrelude + jobSrc + indexSrc + schedSrc + opsSrc + flowSrc

// script is one of kairos's Lua scripts.
type script struct {
	name     string
	body     string
	eval     *redis.Script // helpers and body, for EVALSHA
	allowOOM bool          // runs while Redis is out of memory (see allowOOM)
}

func newScript(name, body string, oom ...bool) *script {
	return &script{name: name, body: body, eval: redis.NewScript(helpersSrc + body), allowOOM: len(oom) > 0 && oom[0]}
}

// allScripts are the scripts (Init loads them).
var allScripts = []*script{enqueueScript, claimScript, cancelScript, rescheduleScript,
	replayScript, releaseScript, unindexScript, handleScript, undeadScript,
	schedsetScript, scheddelScript, schedrefillScript, schedmarkScript, unparkScript, flowpaceScript, flowgateScript, breakerScript, outcomeScript, startScript, lockScript,
	topicretireScript, topicdelScript, quotaScript, tenantpendingScript, revokeScript,
	schedfillScript, labelunindexScript, opnewScript, opadoptScript, opstepScript,
	subpauseScript, subparkScript, subcountScript}

// library is the function library of this version of the scripts: its
// name carries a hash of its source, so that processes of two versions
// sharing a Redis each call their own.
var library = func() (lib struct{ name, src string }) {
	var b strings.Builder
	b.WriteString(helpersSrc)
	b.WriteString("\n-- resetCall clears what a call leaves in the helpers' tables, in case it failed midway\n")
	b.WriteString("local function resetCall()\n  wheel, wheelScore, delta, indexed = {}, {}, {}, {}\nend\n")
	sum := sha1.Sum([]byte(helpersSrc + strings.Join(func() []string {
		var bodies []string
		for _, sc := range allScripts {
			bodies = append(bodies, sc.name, sc.body)
		}
		return bodies
	}(), "\x00")))
	lib.name = "kairos_" + hex.EncodeToString(sum[:6])
	for _, sc := range allScripts {
		flags := ""
		if sc.allowOOM {
			flags = ", flags = {'allow-oom'}"
		}
		fmt.Fprintf(&b, "\nredis.register_function{function_name = '%s'%s, callback = function(KEYS, ARGV)\nresetCall()\n%s\nend}\n", lib.name+"_"+sc.name, flags, sc.body)
	}
	lib.src = "#!lua name=" + lib.name + "\n" + b.String()
	return lib
}()

// fn is the script's function name in the library.
func (sc *script) fn() string { return library.name + "_" + sc.name }

// loadScripts loads the function library on every master, or, where Redis
// has no functions, the scripts' EVALSHA cache; it records which in
// s.functions.
func (s *Store) loadScripts(ctx context.Context) error {
	err := s.loadLibrary(ctx)
	if err == nil {
		s.functions.Store(true)
		return nil
	}
	if !noFunctions(err) {
		return fmt.Errorf("load the function library: %w", err)
	}
	s.functions.Store(false)
	for _, sc := range allScripts {
		if err := sc.eval.Load(ctx, s.c).Err(); err != nil {
			return fmt.Errorf("load scripts: %w", err)
		}
	}
	return nil
}

func (s *Store) loadLibrary(ctx context.Context) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		return c.FunctionLoadReplace(ctx, library.src).Err()
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return load(ctx, c) })
	}
	return load(ctx, s.c)
}

// noFunctions reports whether err says the server has no FUNCTION command.
func noFunctions(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}

// lostScript reports whether a call failed because the node no longer has
// the script or library (a restarted or promoted node, FUNCTION FLUSH).
func lostScript(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "NOSCRIPT") || strings.Contains(err.Error(), "Function not found"))
}

// call queues (or, on a client, runs) sc on c.
func (s *Store) call(ctx context.Context, c redis.Cmdable, sc *script, keys []string, args ...any) *redis.Cmd {
	if s.functions.Load() {
		return c.FCall(ctx, sc.fn(), keys, args...)
	}
	return sc.eval.EvalSha(ctx, c, keys, args...)
}

// run runs sc, loading the scripts again once when the node lost them.
func (s *Store) run(ctx context.Context, sc *script, keys []string, args ...any) *redis.Cmd {
	cmd := s.call(ctx, s.c, sc, keys, args...)
	if lostScript(cmd.Err()) {
		if err := s.loadScripts(ctx); err != nil {
			return cmd
		}
		cmd = s.call(ctx, s.c, sc, keys, args...)
	}
	return cmd
}
