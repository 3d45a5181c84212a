package server

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/pbnjay/memory"
)

// keepRuntime restores the collector's target and memory limit after t.
func keepRuntime(t *testing.T) {
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
}

// unsetenv removes k from the environment for t.
func unsetenv(t *testing.T, k string) {
	t.Setenv(k, "") // restored after t
	os.Unsetenv(k)
}

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestTuneRuntime: without GOGC the collector's target becomes GCPercent;
// with GOGC the runtime's own reading of it stays. Without GOMEMLIMIT a
// soft memory limit is set, no more than the machine's memory; with it,
// its value stays.
func TestTuneRuntime(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Run("defaults", func(t *testing.T) {
		keepRuntime(t)
		unsetenv(t, "AUTOMEMLIMIT")
		unsetenv(t, "GOMEMLIMIT")
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		got := TuneRuntime(env(nil), log)
		if got.GCPercent != GCPercent {
			t.Errorf("GCPercent %d, want %d", got.GCPercent, GCPercent)
		}
		if now := debug.SetGCPercent(-1); now != GCPercent {
			t.Errorf("collector's target in effect %d, want %d", now, GCPercent)
		}
		total := memory.TotalMemory()
		if got.MemoryLimit <= 0 || uint64(got.MemoryLimit) > total {
			t.Errorf("memory limit %d, want one in (0, %d], the machine's memory", got.MemoryLimit, total)
		}
		if now := debug.SetMemoryLimit(-1); now != got.MemoryLimit {
			t.Errorf("memory limit in effect %d, want %d", now, got.MemoryLimit)
		}
	})
	t.Run("set by the environment", func(t *testing.T) {
		keepRuntime(t)
		// as the runtime read them at start
		debug.SetGCPercent(150)
		debug.SetMemoryLimit(1 << 30)
		t.Setenv("GOMEMLIMIT", "1GiB")
		got := TuneRuntime(env(map[string]string{"GOGC": "150"}), log)
		if got.GCPercent != 150 || debug.SetGCPercent(-1) != 150 {
			t.Errorf("GCPercent %d, want GOGC's 150 kept", got.GCPercent)
		}
		if got.MemoryLimit != 1<<30 || debug.SetMemoryLimit(-1) != 1<<30 {
			t.Errorf("memory limit %d, want GOMEMLIMIT's %d kept", got.MemoryLimit, 1<<30)
		}
	})
}
