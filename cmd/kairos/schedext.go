package main

import (
	"fmt"
	"io"

	"github.com/kairos-sh/kairos/client"
)

// showScheduleExt shows a schedule's state, overlap rule, jitter and
// max_runs, when it has them.
func showScheduleExt(w io.Writer, s *client.Schedule) {
	if s.State != "" {
		fmt.Fprintf(w, "state\t%s\n", s.State)
	}
	if s.Overlap != "" && s.Overlap != client.OverlapAllow {
		fmt.Fprintf(w, "overlap\t%s\n", s.Overlap)
	}
	if s.Jitter != 0 {
		fmt.Fprintf(w, "jitter\t%s\n", s.Jitter)
	}
	if s.MaxRuns != 0 {
		fmt.Fprintf(w, "max_runs\t%d\n", s.MaxRuns)
	}
	if s.Runs != nil {
		fmt.Fprintf(w, "runs\t%d\n", *s.Runs)
	}
	if s.Skipped != nil {
		fmt.Fprintf(w, "skipped\t%d\n", *s.Skipped)
	}
}
