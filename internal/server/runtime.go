package server

import (
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// GCPercent is the Go garbage collector's target (GOGC) kairos runs with
// when the GOGC environment variable sets none. Go's default, 100, starts
// a cycle each time the heap doubles its live part; kairos's live heap is
// small and it allocates for every callback, so at 5,000 callbacks a
// second it collected 8 times a second, each pause and its marking taking
// CPU from due callbacks on a 2-core machine. With 400, a fifth as many
// cycles, and due callbacks fire later less often (docs/performance.md,
// "The Go collector"). The heap it leaves grows to five times the live
// part; the memory limit below bounds it.
const GCPercent = 400

// RuntimeTuning is what TuneRuntime set.
type RuntimeTuning struct {
	GCPercent   int   // the collector's target in effect
	MemoryLimit int64 // the soft memory limit in effect, bytes (math.MaxInt64: none)
}

// TuneRuntime sets the collector's target to GCPercent unless GOGC is set,
// and a soft memory limit (GOMEMLIMIT) of 90% of the container's memory
// limit (cgroup) or, without one, of the machine's memory, unless
// GOMEMLIMIT is set: near the limit the collector runs as often as it must,
// so the larger target cannot run a container out of memory. AUTOMEMLIMIT
// sets another ratio, or "off" (automemlimit's own variable). It is
// process-wide: kairos serve and tick, and the load tool starting a kairos
// in its process, call it once at start.
func TuneRuntime(getenv func(string) string, log *slog.Logger) RuntimeTuning {
	var t RuntimeTuning
	if getenv("GOGC") != "" {
		t.GCPercent = debug.SetGCPercent(-1) // read it back: the runtime parsed GOGC at start
		debug.SetGCPercent(t.GCPercent)
	} else {
		debug.SetGCPercent(GCPercent)
		t.GCPercent = GCPercent
	}
	limit, err := memlimit.Set(memlimit.WithProvider(memoryToLimit))
	if err != nil {
		log.Warn("memory limit not set; the collector's target alone bounds the heap", "err", err)
	}
	t.MemoryLimit = limit
	log.Info("go runtime", "gc_percent", t.GCPercent, "memory_limit", memoryText(limit))
	return t
}

// memoryToLimit is the memory the limit is a share of: the container's
// (cgroup) when it has a limit, else the machine's. (memlimit's own
// fallback applies only when there is no cgroup, not to a cgroup without
// a limit.)
func memoryToLimit() (uint64, error) {
	if b, err := memlimit.FromCgroup(); err == nil {
		return b, nil
	}
	return memlimit.FromSystem()
}

// memoryText prints a memory limit for a log line.
func memoryText(b int64) string {
	if b <= 0 || b == math.MaxInt64 {
		return "none"
	}
	return strconv.FormatInt(b>>20, 10) + " MiB"
}
