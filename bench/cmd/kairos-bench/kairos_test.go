package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStatCPU reads utime and stime off /proc/PID/stat, counting fields
// after the command name, which may hold spaces and parentheses.
func TestStatCPU(t *testing.T) {
	stat := "4242 (kairos (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 25 0 0 20 0 12 0 100 0 0"
	if got, want := statCPU(stat), 1750*time.Millisecond; got != want {
		t.Errorf("statCPU = %v, want %v", got, want)
	}
	if got := statCPU("garbage"); got != 0 {
		t.Errorf("statCPU(garbage) = %v, want 0", got)
	}
}

// TestMetricCounters picks kairos's garbage collections out of /metrics.
func TestMetricCounters(t *testing.T) {
	in := "# HELP go_gc_duration_seconds x\ngo_gc_duration_seconds{quantile=\"0\"} 1e-05\n" +
		"go_gc_duration_seconds_sum 0.0125\ngo_gc_duration_seconds_count 42\nkairos_redis_up 1\n"
	want := map[string]int64{"kairos_gc_cycles": 42, "kairos_gc_pause_us": 12500}
	if d := cmp.Diff(want, metricCounters(strings.NewReader(in))); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
}

// TestGlobEscape: a prefix with glob characters matches only itself.
func TestGlobEscape(t *testing.T) {
	if got, want := globEscape(`a*b?[c]\`), `a\*b\?\[c\]\\`; got != want {
		t.Errorf("globEscape = %q, want %q", got, want)
	}
}
