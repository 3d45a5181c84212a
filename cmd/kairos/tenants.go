package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/server"
)

// tenantCommands are `kairos tenants quota|set-quota|reset-quota|revoke`:
// a tenant's quota and the revocation of its tokens (admin tokens, but a
// tenant may read its own quota).
var tenantCommands = []apiCommand{
	{name: "quota", args: []string{"TENANT"}, summary: "show a tenant's quota and pending jobs", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			q, err := c.GetQuota(ctx, args[0])
			if err != nil {
				return err
			}
			return out.print(q, func(w io.Writer) { showQuota(w, q) })
		}
	}},
	{name: "set-quota", args: []string{"TENANT"}, summary: "set a tenant's quota (admin); a flag left out takes the default, 0 is no limit", setup: func(fs *flag.FlagSet) runFunc {
		maxPending := fs.String("max-pending", "", "most pending jobs the tenant may hold; 0: no limit")
		rate := fs.String("rate", "", "most API requests: N a second, or N/PERIOD such as 600/1m; 0: no limit")
		burst := fs.String("burst", "", "requests that may come at once within the rate")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			var req client.QuotaRequest
			if *maxPending != "" {
				n, err := strconv.ParseInt(*maxPending, 10, 64)
				if err != nil || n < 0 {
					return usagef("kairos tenants set-quota", "--max-pending %q: use a whole number of jobs, 0 for no limit", *maxPending)
				}
				req.MaxPending = &n
			}
			if *rate != "" {
				n, per, err := server.ParseRate(*rate)
				if err != nil {
					return usagef("kairos tenants set-quota", "--rate %q: %v", *rate, err)
				}
				req.Rate = &client.QuotaRate{Limit: n, Period: client.Duration(per)}
			}
			if *burst != "" {
				n, err := strconv.Atoi(*burst)
				if err != nil || n < 1 {
					return usagef("kairos tenants set-quota", "--burst %q: use a whole number of requests, at least 1", *burst)
				}
				req.Burst = &n
			}
			q, err := c.PutQuota(ctx, args[0], req)
			if err != nil {
				return err
			}
			return out.print(q, func(w io.Writer) { showQuota(w, q) })
		}
	}},
	{name: "reset-quota", args: []string{"TENANT"}, summary: "give a tenant the default quota again (admin)", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if err := c.DeleteQuota(ctx, args[0]); err != nil {
				return err
			}
			out.note("tenant " + args[0] + " has the default quota")
			return nil
		}
	}},
	{name: "revoke", args: []string{"TENANT"}, summary: "revoke a tenant's tokens issued until now, until --issued-before, or one by --jti (admin)", setup: func(fs *flag.FlagSet) runFunc {
		before := fs.String("issued-before", "", "revoke the tokens issued until this RFC 3339 time (default: now)")
		jti := fs.String("jti", "", "revoke only the token with this id (kairos token prints it)")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			var req client.RevocationRequest
			switch {
			case *before != "" && *jti != "":
				return usagef("kairos tenants revoke", "give --issued-before or --jti, not both")
			case *before != "":
				t, err := time.Parse(time.RFC3339Nano, *before)
				if err != nil {
					return usagef("kairos tenants revoke", "--issued-before %q: use an RFC 3339 time such as 2026-11-21T10:30:00Z", *before)
				}
				req.IssuedBefore = &client.Time{Time: t}
			case *jti != "":
				req.JTI = *jti
			}
			r, err := c.RevokeTokens(ctx, args[0], req)
			if err != nil {
				return err
			}
			return out.print(r, func(w io.Writer) {
				if r.JTI != "" {
					fmt.Fprintf(w, "revoked\ttoken %s of %s\n", r.JTI, r.Tenant)
				} else if r.IssuedBefore != nil {
					fmt.Fprintf(w, "revoked\tevery token of %s issued until %s\n", r.Tenant, formatTime(*r.IssuedBefore))
				}
			})
		}
	}},
}

func showQuota(w io.Writer, q *client.Quota) {
	limit := func(n int64) string {
		if n == 0 {
			return "no limit"
		}
		return strconv.FormatInt(n, 10)
	}
	rate := "no limit"
	if q.Rate != nil {
		rate = fmt.Sprintf("%d per %s (burst %d)", q.Rate.Limit, q.Rate.Period, q.Burst)
	}
	source := "the defaults"
	if q.Custom {
		source = "set by an admin"
	}
	fmt.Fprintf(w, "tenant\t%s\nmax pending\t%s\npending\t%d\nrate\t%s\nquota\t%s\n", q.Tenant, limit(q.MaxPending), q.Pending, rate, source)
}
