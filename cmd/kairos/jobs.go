package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/duration"
)

// jobCommands are `kairos jobs create|get|list|cancel|reschedule|retry`.
var jobCommands = []apiCommand{
	{name: "create", args: []string{"TOPIC"}, summary: "schedule a job (or replace the job of its --id that has not fired); the payload comes from --payload-file FILE, or - for stdin",
		setup: func(fs *flag.FlagSet) runFunc {
			var set settingFlags
			set.define(fs, "this job's own callback URL (left out: its topic's)", " (left out: its topic's)")
			id := fs.String("id", "", "the job's id; left out, kairos makes one (and the create is not retried unless it has a --dedup-key)")
			var when whenFlags
			when.define(fs, "; neither: now")
			var opts createFlags
			opts.define(fs)
			var life lifeFlags
			life.define(fs)
			payloadFile := fs.String("payload-file", "", "read the payload, any JSON, from this file; - reads stdin")
			payload := fs.String("payload", "", "the payload, any JSON, such as '{\"order\": 1042}'")
			successURL := fs.String("success-url", "", "told of the job's delivery, with the receiver's answer, instead of its topic's success URL")
			labels := labelFlag{}
			fs.Var(labels, "label", "a label KEY:VALUE of the job; repeat for more (up to 10)")
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				req := client.JobRequest{ID: *id, RunAt: when.runAt.t, Delay: client.Duration(when.delay), SuccessURL: *successURL,
					CallbackURL: set.callbackURL, CallbackSettings: set.callbackSettings(),
					OnConflict: opts.onConflict, MaxDelay: client.Duration(opts.maxDelay),
					DedupKey: opts.dedupKey, DedupWindow: client.Duration(opts.dedupWindow), Labels: labels.labels()}
				req.ExpiresAt, req.TTL, req.Priority = life.expiresAt.t, client.Duration(life.ttl), life.priority
				var err error
				if req.Payload, err = readPayload("kairos jobs create", out.stdin, *payloadFile, *payload); err != nil {
					return err
				}
				j, err := c.CreateJob(ctx, args[0], req)
				if err != nil {
					return err
				}
				return out.print(j, func(w io.Writer) {
					if j.State == "" { // a duplicate whose first job's record is gone
						fmt.Fprintf(w, "%s job %s in %s: its record is gone (past the retention period)\n", j.Result, j.ID, j.Topic)
						return
					}
					fmt.Fprintf(w, "%s job %s in %s: %s, runs at %s\n", j.Result, j.ID, j.Topic, j.State, formatTime(j.RunAt))
				})
			}
		}},
	{name: "get", args: []string{"TOPIC", "ID"}, summary: "show a job: state, attempts, payload", setup: func(fs *flag.FlagSet) runFunc {
		reveal := fs.Bool("reveal", false, "show secret-looking header values and URL query values in full")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *reveal {
				c = c.With(client.WithRevealedHeaders())
			}
			j, err := c.GetJob(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(j, func(w io.Writer) { showJob(w, j) })
		}
	}},
	{name: "list", args: []string{"TOPIC"}, summary: "list a topic's jobs, newest first", setup: func(fs *flag.FlagSet) runFunc {
		var page pageFlags
		page.define(fs)
		state := fs.String("state", "", "only jobs in this state: "+joinStates())
		labels := labelFlag{}
		fs.Var(labels, "label", "only jobs with this label KEY:VALUE; repeat for jobs with all of them")
		kind := kindFlag(fs)
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *state != "" && !slices.Contains(client.States, client.State(*state)) {
				return usagef("kairos jobs list", "--state %q is not a state: use one of %s", *state, joinStates())
			}
			opts := page.options()
			var err error
			if opts.Kind, err = checkKind("kairos jobs list", *kind); err != nil {
				return err
			}
			opts.State = client.State(*state)
			opts.Labels = labels.labels()
			return page.list(out, "kairos jobs list "+args[0], c.AllJobs(ctx, args[0], opts),
				func() (*client.JobList, error) { return c.ListJobs(ctx, args[0], opts) }, jobTable)
		}
	}},
	{name: "cancel", args: []string{"TOPIC", "ID"}, summary: "cancel a job that has not been delivered (it stays readable as cancelled for the retention period)", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if err := c.CancelJob(ctx, args[0], args[1]); err != nil {
				return err
			}
			return out.print(nil, func(w io.Writer) { fmt.Fprintf(w, "cancelled job %s in %s\n", args[1], args[0]) })
		}
	}},
	{name: "reschedule", args: []string{"TOPIC", "ID"}, summary: "move a job that has not fired to --run-at or --delay", setup: func(fs *flag.FlagSet) runFunc {
		var when whenFlags
		when.define(fs, "; one of them is required")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if when.runAt.t.IsZero() && !when.delaySet {
				return usagef("kairos jobs reschedule", "give --run-at or --delay")
			}
			j, err := c.RescheduleJob(ctx, args[0], args[1], client.RescheduleRequest{RunAt: when.runAt.t, Delay: client.Duration(when.delay)})
			if err != nil {
				return err
			}
			return out.print(j, func(w io.Writer) {
				fmt.Fprintf(w, "rescheduled job %s in %s: %s, runs at %s\n", j.ID, j.Topic, j.State, formatTime(j.NextRunAt))
			})
		}
	}},
	{name: "retry", args: []string{"TOPIC", "ID"}, summary: "replay a dead or expired job now, with a fresh set of attempts", setup: replay},
}

// replay is `kairos jobs retry` and `kairos dead replay`.
func replay(*flag.FlagSet) runFunc {
	return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
		j, err := c.RetryJob(ctx, args[0], args[1])
		if err != nil {
			return err
		}
		return out.print(j, func(w io.Writer) { fmt.Fprintf(w, "replaying job %s in %s: %s\n", j.ID, j.Topic, j.State) })
	}
}

// createFlags are a create's answers to an earlier job: --on-conflict and
// --max-delay for one of its id, --dedup-key and --dedup-window for one of
// its key. The server checks how they combine and says which is wrong.
type createFlags struct {
	onConflict, dedupKey  string
	maxDelay, dedupWindow time.Duration
}

func (f *createFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.onConflict, "on-conflict", "", "what to do to a job of this --id that has not fired: replace (the default), keep, or debounce (needs --max-delay)")
	durationFlag(fs, &f.maxDelay, "max-delay", "with --on-conflict debounce: never move the job past its first create's time plus this, such as 5m (up to 30d)")
	fs.StringVar(&f.dedupKey, "dedup-key", "", "create nothing if a create of this key on the topic came within --dedup-window (not with --id); the create is then retried safely")
	durationFlag(fs, &f.dedupWindow, "dedup-window", "how long --dedup-key holds, such as 1h or 7d (default 10m)")
}

// lifeFlags are a create's --expires-at or --ttl, and --priority.
type lifeFlags struct {
	expiresAt timeFlag
	ttl       time.Duration
	priority  int
}

func (f *lifeFlags) define(fs *flag.FlagSet) {
	fs.Var(&f.expiresAt, "expires-at", "no attempt starts after this time, RFC 3339; the job then ends expired (not with --ttl)")
	durationFlag(fs, &f.ttl, "ttl", "--expires-at as a duration from the run time, such as 15m")
	fs.IntVar(&f.priority, "priority", 0, "0 to 9: higher goes first when a flow limit holds the topic's jobs back")
}

// durationFlag defines a flag of a duration such as 90s, 30m or 7d.
func durationFlag(fs *flag.FlagSet, d *time.Duration, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		p, err := duration.Parse(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 90s, 30m, 1h30m or 7d", v)
		}
		*d = p
		return nil
	})
}

// whenFlags are --run-at and --delay.
type whenFlags struct {
	runAt    timeFlag
	delay    time.Duration
	delaySet bool
}

func (f *whenFlags) define(fs *flag.FlagSet, neither string) {
	fs.Var(&f.runAt, "run-at", "when to fire, RFC 3339 such as 2026-11-21T10:30:00.250Z")
	fs.Func("delay", "how long from now to fire, such as 90s, 30m or 7d"+neither, func(v string) error {
		d, err := duration.Parse(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 90s, 30m, 1h30m or 7d", v)
		}
		f.delay, f.delaySet = d, true
		return nil
	})
}

// readPayload reads the payload of command cmd from file ("-": stdin) or
// takes inline; none is no payload. It must be JSON.
func readPayload(cmd string, stdin io.Reader, file, inline string) (json.RawMessage, error) {
	var b []byte
	var from string
	switch {
	case file != "" && inline != "":
		return nil, usagef(cmd, "give --payload or --payload-file, not both")
	case file == "-":
		var err error
		if b, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("read the payload from stdin: %w", err)
		}
		from = "stdin"
	case file != "":
		var err error
		if b, err = os.ReadFile(file); err != nil {
			return nil, usagef(cmd, "--payload-file: %v", err)
		}
		from = file
	case inline != "":
		b, from = []byte(inline), "--payload"
	default:
		return nil, nil
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, usagef(cmd, "the payload from %s is not JSON (%v): send text as a JSON string, such as \"hello\"", from, err)
	}
	return b, nil
}

func joinStates() string {
	s := make([]string, len(client.States))
	for i, st := range client.States {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// pageFlags are --limit, --cursor and --all of a listing.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

func (p *pageFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&p.limit, "limit", 0, "jobs a page, 1 to 500 (default 50)")
	fs.StringVar(&p.cursor, "cursor", "", "start at this page: the cursor the previous one printed")
	fs.BoolVar(&p.all, "all", false, "every page, not only the first")
}

func (p *pageFlags) options() client.ListOptions {
	return client.ListOptions{Limit: p.limit, Cursor: p.cursor}
}

// list prints one page (from one) or, with --all, every job of all; cmd
// is the command line that fetches the next page.
func (p *pageFlags) list(out *printer, cmd string, all func(func(client.Job, error) bool), one func() (*client.JobList, error), table func(io.Writer, []client.Job)) error {
	var page *client.JobList
	if p.all {
		page = &client.JobList{Jobs: []client.Job{}}
		for j, err := range all {
			if err != nil {
				return err
			}
			page.Jobs = append(page.Jobs, j)
		}
	} else {
		var err error
		if page, err = one(); err != nil {
			return err
		}
	}
	if err := out.print(page, func(w io.Writer) { table(w, page.Jobs) }); err != nil {
		return err
	}
	if page.NextCursor != "" && !out.json {
		out.note("more: %s --cursor %s (or --all)", cmd, page.NextCursor)
	}
	return nil
}

func jobTable(w io.Writer, jobs []client.Job) {
	fmt.Fprintln(w, "ID\tSTATE\tRUN AT\tNEXT RUN\tATTEMPTS\tLAST ATTEMPT")
	for _, j := range jobs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", j.ID, j.State, formatTime(j.RunAt), formatTime(j.NextRunAt), j.Attempts, lastAttempt(j.LastAttempt))
	}
}

// lastAttempt sums up an attempt: its status or error, and how long it took.
func lastAttempt(a *client.Attempt) string {
	if a == nil {
		return "-"
	}
	what := a.Error
	if a.Status != 0 {
		what = fmt.Sprint(a.Status)
	}
	return fmt.Sprintf("%s (%gms)", clip(what, 60), a.DurationMS)
}

func showJob(w io.Writer, j *client.Job) {
	fmt.Fprintf(w, "id\t%s\ntopic\t%s\ntenant\t%s\nstate\t%s\nrun_at\t%s\n", j.ID, j.Topic, j.Tenant, j.State, formatTime(j.RunAt))
	if !j.NextRunAt.IsZero() {
		fmt.Fprintf(w, "next_run_at\t%s\n", formatTime(j.NextRunAt))
	}
	fmt.Fprintf(w, "created_at\t%s\n", formatTime(j.CreatedAt))
	if !j.DoneAt.IsZero() {
		fmt.Fprintf(w, "done_at\t%s\n", formatTime(j.DoneAt))
	}
	fmt.Fprintf(w, "attempts\t%d\n", j.Attempts)
	if !j.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires_at\t%s\n", formatTime(j.ExpiresAt))
	}
	if j.Priority != 0 {
		fmt.Fprintf(w, "priority\t%d\n", j.Priority)
	}
	// The settings the job sets itself; the others are its topic's.
	if j.MaxAttempts != 0 {
		fmt.Fprintf(w, "max_attempts\t%d\n", j.MaxAttempts)
	}
	if j.CallbackURL != "" {
		fmt.Fprintf(w, "callback_url\t%s\n", j.CallbackURL)
	}
	if j.Method != "" {
		fmt.Fprintf(w, "method\t%s\n", j.Method)
	}
	if j.Timeout != 0 {
		fmt.Fprintf(w, "timeout\t%s\n", j.Timeout)
	}
	if b := j.Backoff; b != nil {
		fmt.Fprintf(w, "backoff\t%s initial, %s max\n", durationOrDash(b.Initial), durationOrDash(b.Max))
	}
	showHeaders(w, j.Headers)
	if j.SuccessURL != "" {
		fmt.Fprintf(w, "success_url\t%s\n", j.SuccessURL)
	}
	if len(j.Payload) > 0 {
		fmt.Fprintf(w, "payload\t%s\n", j.Payload)
	}
	if len(j.AttemptLog) > 0 {
		fmt.Fprintln(w, "\nATTEMPT\tAT\tSTATUS\tMS\tERROR\tRESPONSE")
		for _, a := range j.AttemptLog {
			status := "-"
			if a.Status != 0 {
				status = fmt.Sprint(a.Status)
			}
			if a.Event != "" {
				status = a.Event // a replay: attempts go on from N+1
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%g\t%s\t%s\n", a.N, formatTime(a.At), status, a.DurationMS, orDash(a.Error), orDash(answerLine(a)))
		}
	}
}

// answerLine shows an attempt's answer on one line of a table: its kept
// headers, then the start of its body.
func answerLine(a client.Attempt) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.ResponseHeaders)) {
		parts = append(parts, k+": "+a.ResponseHeaders[k])
	}
	if a.Response != "" {
		parts = append(parts, oneLine(a.Response))
	}
	return strings.Join(parts, " | ")
}

// durationOrDash shows a duration the job leaves to its topic as "-".
func durationOrDash(d client.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

// oneLine shows a response snippet on one line of a table.
func oneLine(s string) string {
	return clip(strings.Join(strings.Fields(s), " "), 60)
}

// clip shortens s to n characters, the last three "...".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}
