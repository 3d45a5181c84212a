package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/duration"
)

// topicCommands are `kairos topics list|put|get|delete`.
var topicCommands = []apiCommand{
	{name: "list", summary: "list the topics", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, _ []string, out *printer) error {
			topics, err := c.ListTopics(ctx)
			if err != nil {
				return err
			}
			if topics == nil {
				topics = []client.Topic{}
			}
			return out.print(map[string]any{"topics": topics}, func(w io.Writer) {
				tenants := map[string]bool{}
				for _, t := range topics {
					tenants[t.Tenant] = true
				}
				fmt.Fprintln(w, tenantCol(tenants, "TENANT\t")+"NAME\tCALLBACK URL\tMETHOD\tTIMEOUT\tMAX ATTEMPTS\tCONCURRENCY")
				for _, t := range topics {
					fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%d\t%d\n", tenantCol(tenants, t.Tenant+"\t"), t.Name, orDash(t.CallbackURL),
						t.Method, t.Timeout, t.MaxAttempts, t.Concurrency)
				}
			})
		}
	}},
	{name: "get", args: []string{"NAME"}, summary: "show a topic's settings", setup: func(fs *flag.FlagSet) runFunc {
		reveal := fs.Bool("reveal", false, "show secret-looking header values and URL query values in full")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *reveal {
				c = c.With(client.WithRevealedHeaders())
			}
			t, err := c.GetTopic(ctx, args[0])
			if err != nil {
				return err
			}
			return out.print(t, func(w io.Writer) { showTopic(w, t) })
		}
	}},
	{name: "put", args: []string{"NAME"}, summary: "register a topic, or replace all its settings (those not given go back to the defaults)",
		setup: func(fs *flag.FlagSet) runFunc {
			var set settingFlags
			set.define(fs, "where the topic's callbacks go (required)", " (left out: the kairos default)")
			concurrency := fs.Int("concurrency", 0, "callbacks a worker process runs at once, 1 to 1000 (default 10)")
			rate := fs.String("rate", "", "at most LIMIT/PERIOD deliveries across all processes, such as 50/1s or 1000/1m (default none)")
			parallelism := fs.Int("parallelism", 0, "at most this many callbacks in flight across all processes (default none)")
			flowKey := fs.String("flow-key", "", "share one rate and parallelism quota with the topics of this key (default the topic's own)")
			failureURL := fs.String("failure-url", "", "sent a signed notification when a job of the topic goes dead (default none)")
			successURL := fs.String("success-url", "", "sent a signed notification, with the receiver's answer, after each delivery (default none)")
			responseBytes := fs.Int("response-bytes", -1, "bytes of each answer's body an attempt keeps, 0 to 16384; 0 keeps none (left out: 256)")
			breaker := fs.String("breaker", "", "circuit breaker: FAILURES/COOLDOWN, such as 5/10s: opens after that many failed attempts in a row (default off)")
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				if set.callbackURL == "" {
					return usagef("kairos topics put", "--callback-url is required")
				}
				req := client.TopicRequest{CallbackURL: set.callbackURL, CallbackSettings: set.callbackSettings(), Concurrency: *concurrency,
					Parallelism: *parallelism, FlowKey: *flowKey, FailureURL: *failureURL}
				req.SuccessURL = *successURL
				if *responseBytes >= 0 {
					req.ResponseBytes = responseBytes
				}
				if *rate != "" {
					n, d, err := countPer("kairos topics put", "--rate", *rate, "LIMIT/PERIOD, such as 50/1s")
					if err != nil {
						return err
					}
					req.Rate = &client.Rate{Limit: n, Period: client.Duration(d)}
				}
				if *breaker != "" {
					n, d, err := countPer("kairos topics put", "--breaker", *breaker, "FAILURES/COOLDOWN, such as 5/10s")
					if err != nil {
						return err
					}
					req.Breaker = &client.BreakerRequest{Failures: n, Cooldown: client.Duration(d)}
				}
				t, created, err := c.PutTopic(ctx, args[0], req)
				if err != nil {
					return err
				}
				return out.print(t, func(w io.Writer) {
					verb := "updated"
					if created {
						verb = "registered"
					}
					fmt.Fprintf(w, "%s topic %s\n\n", verb, t.Name)
					showTopic(w, t)
				})
			}
		}},
	{name: "pause", args: []string{"NAME"}, summary: "stop a topic's deliveries: its due jobs wait until resume", setup: pauseTopicCommand(true)},
	{name: "resume", args: []string{"NAME"}, summary: "let a paused topic deliver: held jobs fire, oldest due first", setup: pauseTopicCommand(false)},
	{name: "delete", args: []string{"NAME"}, summary: "delete a topic that holds no pending or dead jobs", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if err := c.DeleteTopic(ctx, args[0]); err != nil {
				return err
			}
			return out.print(nil, func(w io.Writer) { fmt.Fprintf(w, "deleted topic %s\n", args[0]) })
		}
	}},
}

// countPer reads the "N/DURATION" of a flag of command cmd.
func countPer(cmd, flag, v, want string) (int, time.Duration, error) {
	count, per, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(count)
	d, derr := duration.Parse(per)
	if !ok || err != nil || derr != nil {
		return 0, 0, usagef(cmd, "%s %q: want %s", flag, v, want)
	}
	return n, d, nil
}

func pauseTopicCommand(pause bool) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			f, verb := c.ResumeTopic, "resumed"
			if pause {
				f, verb = c.PauseTopic, "paused"
			}
			t, err := f(ctx, args[0])
			if err != nil {
				return err
			}
			return out.print(t, func(w io.Writer) { fmt.Fprintf(w, "%s topic %s\n", verb, t.Name) })
		}
	}
}

// tenantCol is s when the rows span several tenants (an admin's view),
// else nothing.
func tenantCol(tenants map[string]bool, s string) string {
	if len(tenants) > 1 {
		return s
	}
	return ""
}

func showTopic(w io.Writer, t *client.Topic) {
	fmt.Fprintf(w, "name\t%s\ntenant\t%s\ncallback_url\t%s\nmethod\t%s\n", t.Name, t.Tenant, orDash(t.CallbackURL), t.Method)
	showHeaders(w, t.Headers)
	fmt.Fprintf(w, "timeout\t%s\nmax_attempts\t%d\nbackoff\t%s initial, %s max\nconcurrency\t%d\n",
		t.Timeout, t.MaxAttempts, t.Backoff.Initial, t.Backoff.Max, t.Concurrency)
	if t.Rate != nil {
		fmt.Fprintf(w, "rate\t%d per %s\n", t.Rate.Limit, t.Rate.Period)
	}
	if t.Parallelism > 0 {
		fmt.Fprintf(w, "parallelism\t%d\n", t.Parallelism)
	}
	if t.FlowKey != "" {
		fmt.Fprintf(w, "flow_key\t%s\n", t.FlowKey)
	}
	if t.FailureURL != "" {
		fmt.Fprintf(w, "failure_url\t%s\n", t.FailureURL)
	}
	if t.SuccessURL != "" {
		fmt.Fprintf(w, "success_url\t%s\n", t.SuccessURL)
	}
	fmt.Fprintf(w, "response_bytes\t%d\n", t.ResponseBytes)
	switch b := t.Breaker; {
	case b != nil && b.Failures > 0:
		fmt.Fprintf(w, "breaker\t%s (opens after %d failures in a row, for %s)\n", b.State, b.Failures, b.Cooldown)
	case b != nil:
		fmt.Fprintf(w, "breaker\t%s (none configured)\n", b.State)
	}
	fmt.Fprintf(w, "paused\t%t\ncreated_at\t%s\nupdated_at\t%s\n", t.Paused, formatTime(t.CreatedAt), formatTime(t.UpdatedAt))
}

func showHeaders(w io.Writer, h map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		fmt.Fprintf(w, "header\t%s: %s\n", name, h[name])
	}
}
