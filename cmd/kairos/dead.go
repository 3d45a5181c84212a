package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/kairos-sh/kairos/client"
)

// deadCommands are `kairos dead list|replay`.
var deadCommands = []apiCommand{
	{name: "list", summary: "list dead jobs, most recently dead first: of every topic, or of --topic", setup: func(fs *flag.FlagSet) runFunc {
		var page pageFlags
		page.define(fs)
		topic := fs.String("topic", "", "only this topic's dead jobs")
		kind := kindFlag(fs)
		return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
			opts := page.options()
			var err error
			if opts.Kind, err = checkKind("kairos dead list", *kind); err != nil {
				return err
			}
			if *topic != "" {
				opts.State = client.StateDead
				return page.list(out, "kairos dead list --topic "+*topic, c.AllJobs(ctx, *topic, opts),
					func() (*client.JobList, error) { return c.ListJobs(ctx, *topic, opts) }, deadTable)
			}
			return page.list(out, "kairos dead list", c.AllDead(ctx, opts),
				func() (*client.JobList, error) { return c.ListDead(ctx, opts) }, deadTable)
		}
	}},
	{name: "replay", args: []string{"TOPIC", "ID"}, summary: "replay a dead job now, with a fresh set of attempts", setup: replay},
}

// kindFlag defines --kind on fs, which keeps jobs or notifications only.
func kindFlag(fs *flag.FlagSet) *string {
	return fs.String("kind", "", "only jobs (job) or only the failure and success notifications kairos makes (notification); both when unset")
}

// checkKind reads the value of --kind of command cmd.
func checkKind(cmd, kind string) (client.Kind, error) {
	if k := client.Kind(kind); k != "" && k != client.KindJob && k != client.KindNotification {
		return "", usagef(cmd, "--kind %q: use job or notification", kind)
	}
	return client.Kind(kind), nil
}

func deadTable(w io.Writer, jobs []client.Job) {
	tenants := map[string]bool{}
	for _, j := range jobs {
		tenants[j.Tenant] = true
	}
	fmt.Fprintln(w, tenantCol(tenants, "TENANT\t")+"TOPIC\tID\tDIED AT\tATTEMPTS\tLAST ATTEMPT")
	for _, j := range jobs {
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%d\t%s\n", tenantCol(tenants, j.Tenant+"\t"), j.Topic, j.ID, formatTime(j.DoneAt), j.Attempts, lastAttempt(j.LastAttempt))
	}
}
