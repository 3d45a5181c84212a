package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/client"
)

func init() {
	jobCommands = append(jobCommands, bulkCommand)
	apiGroups["jobs"] = jobCommands // the map holds the slice as it was before the append
	apiGroups["operations"] = operationCommands
}

// labelFlag is a repeatable KEY:VALUE label flag.
type labelFlag map[string]string

func (l labelFlag) String() string { return "" }

func (l labelFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY:VALUE", v)
	}
	l[k] = val
	return nil
}

// labels is the labels given, or nil.
func (l labelFlag) labels() map[string]string {
	if len(l) == 0 {
		return nil
	}
	return l
}

// bulkCommand is `kairos jobs bulk TOPIC --action cancel|replay` with a filter.
var bulkCommand = apiCommand{name: "bulk", args: []string{"TOPIC"},
	summary: "cancel or replay, in the background, the jobs that --state, --label, --run-at-from and --run-at-to select (at least one)",
	setup: func(fs *flag.FlagSet) runFunc {
		action := fs.String("action", "", "cancel (jobs not delivered; dead ones are discarded) or replay (dead jobs)")
		state := fs.String("state", "", "only jobs in this state: "+joinStates())
		labels := labelFlag{}
		fs.Var(labels, "label", "only jobs with this label KEY:VALUE; repeat for jobs with all of them")
		var from, to timeFlag
		fs.Var(&from, "run-at-from", "only jobs whose run_at is at or after this RFC 3339 time")
		fs.Var(&to, "run-at-to", "only jobs whose run_at is before this RFC 3339 time")
		wait := fs.Bool("wait", false, "wait until the operation is done, showing its progress on stderr")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *action != client.BulkCancel && *action != client.BulkReplay {
				return usagef("kairos jobs bulk", "--action is cancel or replay")
			}
			if *state != "" && !slices.Contains(client.States, client.State(*state)) {
				return usagef("kairos jobs bulk", "--state %q is not a state: use one of %s", *state, joinStates())
			}
			f := client.BulkFilter{State: client.State(*state), Labels: labels.labels(),
				RunAtFrom: client.Time{Time: from.t}, RunAtTo: client.Time{Time: to.t}}
			if f.State == "" && f.Labels == nil && from.t.IsZero() && to.t.IsZero() {
				return usagef("kairos jobs bulk", "give a filter: --state, --label, --run-at-from or --run-at-to (an operation on every job of a topic is refused)")
			}
			op, err := c.BulkJobs(ctx, args[0], client.BulkRequest{Action: *action, Filter: f})
			if err != nil {
				return err
			}
			for *wait && op.State != client.OperationDone {
				fmt.Fprintf(out.stderr, "%s: %d of %d done, %d failed\n", op.ID, op.Done, op.Matched, op.Failed)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
				if op, err = c.GetOperation(ctx, op.ID); err != nil {
					return err
				}
			}
			return out.print(op, func(w io.Writer) { showOperation(w, op) })
		}
	}}

// operationCommands are `kairos operations get`.
var operationCommands = []apiCommand{
	{name: "get", args: []string{"ID"}, summary: "show a bulk operation and its progress", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			op, err := c.GetOperation(ctx, args[0])
			if err != nil {
				return err
			}
			return out.print(op, func(w io.Writer) { showOperation(w, op) })
		}
	}},
}

func showOperation(w io.Writer, op *client.Operation) {
	fmt.Fprintf(w, "operation %s: %s of topic %s, %s: %d matched, %d done, %d failed\n",
		op.ID, op.Action, op.Topic, op.State, op.Matched, op.Done, op.Failed)
}
