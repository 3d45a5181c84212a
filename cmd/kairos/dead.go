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
		return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
			opts := page.options()
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
