package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/duration"
)

// scheduleCommands are `kairos schedules put|get|list|delete|pause|resume|trigger|backfill`.
var scheduleCommands = []apiCommand{
	{name: "put", args: []string{"TOPIC", "ID"}, summary: "create a recurring schedule, or replace it whole (--cron or --every); the payload comes from --payload-file FILE, or - for stdin",
		setup: func(fs *flag.FlagSet) runFunc {
			const cmd = "kairos schedules put"
			var set settingFlags
			set.define(fs, "the occurrences' callback URL (left out: the topic's)", " (left out: the topic's)")
			cron := fs.String("cron", "", `a cron pattern: 5 fields, 6 with leading seconds, or a macro such as @daily ("0 9 * * MON-FRI")`)
			every := duration.Flag(fs, "every", 0, "an interval instead of --cron, at least 1s, counted from --start-at or the creation (90s, 15m, 1d)")
			tz := fs.String("timezone", "", "IANA zone the cron fields are read in, such as Europe/Paris (default UTC)")
			var start, end timeFlag
			fs.Var(&start, "start-at", "fire no earlier than this RFC 3339 time")
			fs.Var(&end, "end-at", "fire no later than this RFC 3339 time")
			catchUp := fs.String("catch-up", "", "what fires for occurrences missed while kairos was down: one (default), none, or all (at most 100)")
			paused := fs.Bool("paused", false, "create it paused")
			overlap := fs.String("overlap", "", "while the previous occurrence runs: allow (default), skip, or buffer_one (fire once it ends; at most one waits)")
			jitter := duration.Flag(fs, "jitter", 0, "delay each occurrence by up to this, the same for an instant every time (shorter than the gaps between instants)")
			maxRuns := fs.Int("max-runs", 0, "complete the schedule after this many occurrences fired (0: no bound)")
			payloadFile := fs.String("payload-file", "", "read the payload, any JSON, from this file; - reads stdin")
			payload := fs.String("payload", "", "the payload of every occurrence, any JSON")
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				if (*cron == "") == (*every == 0) {
					return usagef(cmd, "give --cron or --every (one of them)")
				}
				req := client.ScheduleRequest{Cron: *cron, Every: client.Duration(*every), Timezone: *tz,
					StartAt: start.t, EndAt: end.t, CatchUp: client.CatchUp(*catchUp), Paused: *paused,
					CallbackURL: set.callbackURL, CallbackSettings: set.callbackSettings(),
					Overlap: client.Overlap(*overlap), Jitter: client.Duration(*jitter), MaxRuns: *maxRuns}
				var err error
				if req.Payload, err = readPayload(cmd, out.stdin, *payloadFile, *payload); err != nil {
					return err
				}
				s, err := c.PutSchedule(ctx, args[0], args[1], req)
				if err != nil {
					return err
				}
				return out.print(s, func(w io.Writer) {
					fmt.Fprintf(w, "%s schedule %s in %s\n\n", s.Result, s.ID, s.Topic)
					showSchedule(w, s)
				})
			}
		}},
	{name: "get", args: []string{"TOPIC", "ID"}, summary: "show a schedule: pattern, next runs, last run", setup: func(fs *flag.FlagSet) runFunc {
		reveal := fs.Bool("reveal", false, "show secret-looking header values and URL query values in full")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *reveal {
				c = c.With(client.WithRevealedHeaders())
			}
			s, err := c.GetSchedule(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(s, func(w io.Writer) { showSchedule(w, s) })
		}
	}},
	{name: "list", args: []string{"TOPIC"}, summary: "list a topic's schedules, by id", setup: func(fs *flag.FlagSet) runFunc {
		var page pageFlags
		page.define(fs)
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			var list *client.ScheduleList
			if page.all {
				list = &client.ScheduleList{Schedules: []client.Schedule{}}
				for s, err := range c.AllSchedules(ctx, args[0], page.options()) {
					if err != nil {
						return err
					}
					list.Schedules = append(list.Schedules, s)
				}
			} else {
				var err error
				if list, err = c.ListSchedules(ctx, args[0], page.options()); err != nil {
					return err
				}
			}
			if err := out.print(list, func(w io.Writer) { scheduleTable(w, list.Schedules) }); err != nil {
				return err
			}
			if list.NextCursor != "" && !out.json {
				out.note("more: kairos schedules list %s --cursor %s (or --all)", args[0], list.NextCursor)
			}
			return nil
		}
	}},
	{name: "delete", args: []string{"TOPIC", "ID"}, summary: "delete a schedule and its pending occurrence (one being delivered finishes)", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if err := c.DeleteSchedule(ctx, args[0], args[1]); err != nil {
				return err
			}
			return out.print(nil, func(w io.Writer) { fmt.Fprintf(w, "deleted schedule %s in %s\n", args[1], args[0]) })
		}
	}},
	{name: "pause", args: []string{"TOPIC", "ID"}, summary: "stop a schedule firing until it is resumed", setup: pauseCommand(true)},
	{name: "resume", args: []string{"TOPIC", "ID"}, summary: "resume a paused schedule from its next future run", setup: pauseCommand(false)},
	{name: "trigger", args: []string{"TOPIC", "ID"}, summary: "fire one occurrence now, outside the pattern", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			j, err := c.TriggerSchedule(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(j, func(w io.Writer) {
				fmt.Fprintf(w, "triggered schedule %s in %s: job %s, %s\n", args[1], j.Topic, j.ID, j.State)
			})
		}
	}},
	{name: "backfill", args: []string{"TOPIC", "ID"}, summary: "fire each instant of the pattern in [--from, --to) that has not fired (at most 1000)", setup: func(fs *flag.FlagSet) runFunc {
		var from, to timeFlag
		fs.Var(&from, "from", "the first instant of the range (RFC 3339, inclusive)")
		fs.Var(&to, "to", "the end of the range (RFC 3339, exclusive)")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if from.t.IsZero() || to.t.IsZero() {
				return usagef("kairos schedules backfill", "give --from and --to")
			}
			n, err := c.BackfillSchedule(ctx, args[0], args[1], from.t, to.t)
			if err != nil {
				return err
			}
			return out.print(map[string]int{"instants": n}, func(w io.Writer) {
				fmt.Fprintf(w, "backfilled schedule %s in %s: %d instants fired\n", args[1], args[0], n)
			})
		}
	}},
}

func pauseCommand(pause bool) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			f, verb := c.ResumeSchedule, "resumed"
			if pause {
				f, verb = c.PauseSchedule, "paused"
			}
			s, err := f(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "%s schedule %s in %s\n\n", verb, s.ID, s.Topic)
				showSchedule(w, s)
			})
		}
	}
}

// pattern shows a schedule's cron in its zone, or its interval.
func pattern(s client.Schedule) string {
	if s.Cron != "" {
		return s.Cron + " (" + s.Timezone + ")"
	}
	return "every " + s.Every.String()
}

func scheduleTable(w io.Writer, ss []client.Schedule) {
	fmt.Fprintln(w, "ID\tPATTERN\tPAUSED\tNEXT RUN\tLAST RUN\tLAST STATE")
	for _, s := range ss {
		next, last, state := "-", "-", "-"
		if len(s.NextRuns) > 0 {
			next = formatTime(s.NextRuns[0])
		}
		if s.LastRun != nil {
			last, state = formatTime(s.LastRun.At), orDash(string(s.LastRun.State))
		}
		fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\t%s\n", s.ID, pattern(s), s.Paused, next, last, state)
	}
}

func showSchedule(w io.Writer, s *client.Schedule) {
	fmt.Fprintf(w, "id\t%s\ntopic\t%s\ntenant\t%s\npattern\t%s\ncatch_up\t%s\npaused\t%t\n", s.ID, s.Topic, s.Tenant, pattern(*s), s.CatchUp, s.Paused)
	showScheduleExt(w, s)
	if !s.StartAt.IsZero() {
		fmt.Fprintf(w, "start_at\t%s\n", formatTime(s.StartAt))
	}
	if !s.EndAt.IsZero() {
		fmt.Fprintf(w, "end_at\t%s\n", formatTime(s.EndAt))
	}
	zone, err := time.LoadLocation(s.Timezone)
	for _, t := range s.NextRuns {
		local := ""
		if err == nil && s.Timezone != "UTC" {
			local = "\t" + t.In(zone).Format("Mon 2006-01-02 15:04:05.000 MST")
		}
		fmt.Fprintf(w, "next_run\t%s%s\n", formatTime(t), local)
	}
	if s.PendingJob != "" {
		fmt.Fprintf(w, "pending_job\t%s\n", s.PendingJob)
	}
	if r := s.LastRun; r != nil {
		fmt.Fprintf(w, "last_run\t%s job %s (%s) %s %s\n", formatTime(r.At), r.JobID, orDash(r.Trigger), orDash(string(r.State)), lastAttempt(r.LastAttempt))
	}
	if s.CallbackURL != "" {
		fmt.Fprintf(w, "callback_url\t%s\n", s.CallbackURL)
	}
	if s.Method != "" {
		fmt.Fprintf(w, "method\t%s\n", s.Method)
	}
	if s.MaxAttempts != 0 {
		fmt.Fprintf(w, "max_attempts\t%d\n", s.MaxAttempts)
	}
	if s.Timeout != 0 {
		fmt.Fprintf(w, "timeout\t%s\n", s.Timeout)
	}
	if b := s.Backoff; b != nil {
		fmt.Fprintf(w, "backoff\t%s initial, %s max\n", durationOrDash(b.Initial), durationOrDash(b.Max))
	}
	showHeaders(w, s.Headers)
	if len(s.Payload) > 0 {
		fmt.Fprintf(w, "payload\t%s\n", s.Payload)
	}
	fmt.Fprintf(w, "created_at\t%s\nupdated_at\t%s\n", formatTime(s.CreatedAt), formatTime(s.UpdatedAt))
}
