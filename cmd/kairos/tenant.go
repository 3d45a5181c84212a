package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/kairos-sh/kairos/client"
)

// keyCommands are `kairos keys list|rotate`: the tenant's callback signing
// secrets.
var keyCommands = []apiCommand{
	{name: "list", summary: "show the current and next callback signing secrets", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
			k, err := c.GetSigningKeys(ctx)
			if err != nil {
				return err
			}
			return out.print(k, func(w io.Writer) { showKeys(w, k) })
		}
	}},
	{name: "rotate", summary: "make the next secret current and draw a new next one", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
			k, err := c.RotateSigningKeys(ctx)
			if err != nil {
				return err
			}
			if err := out.print(k, func(w io.Writer) { showKeys(w, k) }); err != nil {
				return err
			}
			if !out.json {
				out.note("callbacks are signed with the new current secret now; give receivers the new next one before the following rotation")
			}
			return nil
		}
	}},
}

func showKeys(w io.Writer, k *client.SigningKeys) {
	fmt.Fprintf(w, "current\t%s\nnext\t%s\n", k.Current, k.Next)
}

// statsCommand is `kairos stats`.
var statsCommand = apiCommand{summary: "jobs by state and the last minutes' deliveries, per topic", setup: func(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
		s, err := c.GetStats(ctx)
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) {
			tenants := map[string]bool{}
			for _, t := range s.Topics {
				tenants[t.Tenant] = true
			}
			fmt.Fprintln(w, tenantCol(tenants, "TENANT\t")+"TOPIC\tSCHEDULED\tREADY\tACTIVE\tRETRYING\tDELIVERED\tDEAD\tDELIVERED/S\tLATE P99 MS")
			for _, t := range s.Topics {
				n := t.Counts
				fmt.Fprintf(w, "%s%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%g\n", tenantCol(tenants, t.Tenant+"\t"), t.Topic,
					n.Scheduled, n.Ready, n.Active, n.Retrying, n.Delivered, n.Dead, t.Recent.DeliveredPerSecond, t.Recent.Lateness.P99MS)
			}
		})
	}
}}
