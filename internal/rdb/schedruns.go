package rdb

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos"
)

// A schedule's runs: its overlap rule and max_runs, and what the claims
// counted of its occurrences (runs, skipped instants, the last one fired, a
// buffered one), stored in its header's extension; and what its answer
// shows of them (showExt). Backfills are in backfill.go.

// scheduleExtFlag is the flag of fl that says a schedule's extension
// follows its header (layout.go, "Schedules").
const scheduleExtFlag = 4

// scheduleExtension is a schedule's extension as stored
// (scheduleExtFields): its overlap rule and max_runs, and what the claims
// counted.
type scheduleExtension struct {
	overlap                     kairos.Overlap
	maxRuns, runs, skipped      int64
	lastOccurred, bufferedUntil int64 // lo and bw
}

// completed reports whether x's schedule fired its max_runs.
func (x *scheduleExtension) completed() bool {
	return x != nil && x.maxRuns > 0 && x.runs >= x.maxRuns
}

// decodeScheduleExt reads an extension from the start of b and says how
// many bytes it took.
func decodeScheduleExt(b string) (scheduleExtension, int, error) {
	if len(b) < scheduleExtLen {
		return scheduleExtension{}, 0, fmt.Errorf("schedule extension: %w", errBadRecord)
	}
	var x scheduleExtension
	nums, code, at := readHeader(b, scheduleExtFields)
	for ov, c := range overlapCodes {
		if code == c {
			x.overlap = ov
		}
	}
	if x.overlap == "" {
		return scheduleExtension{}, 0, fmt.Errorf("schedule extension: %w", errBadRecord)
	}
	x.maxRuns, x.runs, x.skipped = nums["mr"], nums["rn"], nums["sk"]
	x.lastOccurred, x.bufferedUntil = nums["lo"], nums["bw"]
	return x, at, nil
}

// extArg is schedset.lua's ARGV[14] for sc: "" when sc needs no
// extension (it then costs what a schedule without these settings costs),
// else the overlap code and max_runs.
func extArg(sc kairos.Schedule) string {
	ov := cmp.Or(sc.Overlap, kairos.OverlapAllow)
	if ov == kairos.OverlapAllow && sc.MaxRuns == 0 {
		return ""
	}
	return string(overlapCodes[ov]) + strconv.Itoa(sc.MaxRuns)
}

// showExt sets what sc shows of r's extension and of meta m.
func (r scheduleRecord) showExt(sc *kairos.Schedule, m scheduleMeta) {
	sc.Jitter = time.Duration(m.JitterMS) * time.Millisecond
	if m.Backfilled != 0 {
		sc.LastBackfilled, sc.BackfilledAt = fromMS(m.Backfilled), fromMS(m.BackfilledAt)
	}
	x := r.ext
	if x == nil {
		sc.Overlap = kairos.OverlapAllow
		return
	}
	sc.Overlap, sc.MaxRuns, sc.Runs, sc.Skipped = x.overlap, int(x.maxRuns), int(x.runs), x.skipped
	sc.Completed = x.completed()
}
