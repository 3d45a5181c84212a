package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// subscriptionCommands are `kairos subscriptions
// list|put|get|delete|pause|resume|keys|rotate-key`: a topic's fan-out
// endpoints.
var subscriptionCommands = []apiCommand{
	{name: "list", args: []string{"TOPIC"}, summary: "list a topic's subscriptions, with their counts and breaker state", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			subs, err := c.ListSubscriptions(ctx, args[0])
			if err != nil {
				return err
			}
			if subs == nil {
				subs = []client.Subscription{}
			}
			return out.print(map[string]any{"subscriptions": subs}, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tURL\tEVENT TYPES\tFILTER\tPAUSED\tBREAKER\tPENDING\tDELIVERED\tDEAD")
				for _, s := range subs {
					filter := "-"
					if len(s.Filter) > 0 {
						filter = clip(string(s.Filter), 40)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%t\t%s\t%d\t%d\t%d\n", s.Name, s.URL, eventTypes(s.EventTypes), filter,
						s.Paused, s.Breaker.State, s.Counts.Pending, s.Counts.Delivered, s.Counts.Dead)
				}
			})
		}
	}},
	{name: "put", args: []string{"TOPIC", "NAME"},
		summary: "register a subscription of a topic (and the topic, when it has none), or replace all its settings",
		setup: func(fs *flag.FlagSet) runFunc {
			const cmd = "kairos subscriptions put"
			// --url is the flag of every API command (where kairos listens):
			// the subscription's URL is --callback-url, as a topic's and a job's
			var set settingFlags
			set.define(fs, "where its deliveries go, the subscription's url (required)", " (left out: the topic's)")
			var events stringsFlag
			fs.Var(&events, "event-type", "a message event type it receives, such as order.created; repeat for more (left out: every message)")
			filter := fs.String("filter", "", `a JSON filter matched against each message's payload, such as '{"data.total": {"$gte": 100}}' (docs/fanout.md#filters)`)
			rate := fs.String("rate", "", "at most LIMIT/PERIOD of its deliveries across all processes, such as 50/1s (default none)")
			parallelism := fs.Int("parallelism", 0, "at most this many of its deliveries in flight across all processes (default none)")
			breaker := fs.String("breaker", "", "its own circuit breaker: FAILURES/COOLDOWN, such as 5/10s (default off)")
			signing := fs.String("signing", "", "topic (sign as the topic signs, the default) or subscription (a secret of its own: kairos subscriptions keys)")
			description := fs.String("description", "", "what it is for, up to 500 characters")
			var paused optBool
			fs.Var(&paused, "paused", "pause it (--paused) or resume it (--paused=false) with the put; left out, it stays as it is")
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				if set.callbackURL == "" {
					return usagef(cmd, "--callback-url is required: where its deliveries go")
				}
				req := client.SubscriptionRequest{URL: set.callbackURL, EventTypes: events, CallbackSettings: set.callbackSettings(),
					Parallelism: *parallelism, Signing: *signing, Description: *description, Paused: paused.v}
				if *filter != "" {
					var obj map[string]json.RawMessage
					if err := json.Unmarshal([]byte(*filter), &obj); err != nil {
						return usagef(cmd, "--filter is not a JSON object (%v): write it such as '{\"data.total\": {\"$gte\": 100}}'", err)
					}
					req.Filter = json.RawMessage(*filter)
				}
				if *rate != "" {
					n, d, err := countPer(cmd, "--rate", *rate, "LIMIT/PERIOD, such as 50/1s")
					if err != nil {
						return err
					}
					req.Rate = &client.Rate{Limit: n, Period: client.Duration(d)}
				}
				if *breaker != "" {
					n, d, err := countPer(cmd, "--breaker", *breaker, "FAILURES/COOLDOWN, such as 5/10s")
					if err != nil {
						return err
					}
					req.Breaker = &client.BreakerRequest{Failures: n, Cooldown: client.Duration(d)}
				}
				s, created, err := c.PutSubscription(ctx, args[0], args[1], req)
				if err != nil {
					return err
				}
				return out.print(s, func(w io.Writer) {
					verb := "updated"
					if created {
						verb = "registered"
					}
					fmt.Fprintf(w, "%s subscription %s of %s\n\n", verb, s.Name, s.Topic)
					showSubscription(w, s)
				})
			}
		}},
	{name: "get", args: []string{"TOPIC", "NAME"}, summary: "show a subscription: settings, counts, breaker state", setup: func(fs *flag.FlagSet) runFunc {
		reveal := fs.Bool("reveal", false, "show secret-looking header values and URL query values in full")
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			if *reveal {
				c = c.With(client.WithRevealedHeaders())
			}
			s, err := c.GetSubscription(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(s, func(w io.Writer) { showSubscription(w, s) })
		}
	}},
	{name: "delete", args: []string{"TOPIC", "NAME"},
		summary: "delete a subscription; a bulk operation cancels its pending deliveries (its delivered and dead ones stay)",
		setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				d, err := c.DeleteSubscription(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return out.print(d, func(w io.Writer) {
					if d.Operation == "" {
						fmt.Fprintf(w, "deleted subscription %s of %s; its pending deliveries are cancelled\n", d.Subscription, args[0])
						return
					}
					fmt.Fprintf(w, "deleted subscription %s of %s; operation %s cancels its pending deliveries (kairos operations get %s)\n",
						d.Subscription, args[0], d.Operation, d.Operation)
				})
			}
		}},
	{name: "pause", args: []string{"TOPIC", "NAME"}, summary: "stop a subscription's deliveries: they wait, parked, until resume; the topic's others go on",
		setup: pauseSubscriptionCommand(true)},
	{name: "resume", args: []string{"TOPIC", "NAME"}, summary: "let a paused subscription deliver: its parked deliveries are filed at their run_at",
		setup: pauseSubscriptionCommand(false)},
	{name: "keys", args: []string{"TOPIC", "NAME"}, summary: "show the own signing secrets of a subscription put with --signing subscription",
		setup: subscriptionKeysCommand(false)},
	{name: "rotate-key", args: []string{"TOPIC", "NAME"}, summary: "make a subscription's next secret current and draw a new next one",
		setup: subscriptionKeysCommand(true)},
}

func pauseSubscriptionCommand(pause bool) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			f, verb := c.ResumeSubscription, "resumed"
			if pause {
				f, verb = c.PauseSubscription, "paused"
			}
			s, err := f(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "%s subscription %s of %s (%d pending)\n", verb, s.Name, s.Topic, s.Counts.Pending)
			})
		}
	}
}

func subscriptionKeysCommand(rotate bool) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			f := c.GetSubscriptionSigningKeys
			if rotate {
				f = c.RotateSubscriptionSigningKeys
			}
			k, err := f(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(k, func(w io.Writer) {
				fmt.Fprintf(w, "current\t%s\nnext\t%s\n", k.Current, k.Next)
			})
		}
	}
}

func showSubscription(w io.Writer, s *client.Subscription) {
	fmt.Fprintf(w, "name\t%s\ntopic\t%s\ntenant\t%s\nurl\t%s\nevent_types\t%s\n", s.Name, s.Topic, s.Tenant, s.URL, eventTypes(s.EventTypes))
	if len(s.Filter) > 0 {
		fmt.Fprintf(w, "filter\t%s\n", s.Filter)
	}
	showHeaders(w, s.Headers)
	// the settings it sets itself; the others are its topic's
	if s.Method != "" {
		fmt.Fprintf(w, "method\t%s\n", s.Method)
	}
	if s.Timeout != 0 {
		fmt.Fprintf(w, "timeout\t%s\n", s.Timeout)
	}
	if s.MaxAttempts != 0 {
		fmt.Fprintf(w, "max_attempts\t%d\n", s.MaxAttempts)
	}
	if b := s.Backoff; b != nil {
		fmt.Fprintf(w, "backoff\t%s initial, %s max\n", durationOrDash(b.Initial), durationOrDash(b.Max))
	}
	if s.Rate != nil {
		fmt.Fprintf(w, "rate\t%d per %s\n", s.Rate.Limit, s.Rate.Period)
	}
	if s.Parallelism > 0 {
		fmt.Fprintf(w, "parallelism\t%d\n", s.Parallelism)
	}
	if b := s.Breaker; b.Failures > 0 {
		fmt.Fprintf(w, "breaker\t%s (opens after %d failures in a row, for %s)", b.State, b.Failures, b.Cooldown)
		if b.OpenUntil != nil {
			fmt.Fprintf(w, ", open until %s", formatTime(*b.OpenUntil))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "breaker\t%s (none configured)\n", b.State)
	}
	fmt.Fprintf(w, "signing\t%s\npaused\t%t\n", s.Signing, s.Paused)
	if s.Description != "" {
		fmt.Fprintf(w, "description\t%s\n", s.Description)
	}
	fmt.Fprintf(w, "counts\t%d pending, %d delivered, %d dead\ncreated_at\t%s\nupdated_at\t%s\n",
		s.Counts.Pending, s.Counts.Delivered, s.Counts.Dead, formatTime(s.CreatedAt), formatTime(s.UpdatedAt))
}

// eventTypes shows a subscription's event types; none named is every one.
func eventTypes(types []string) string {
	if types == nil {
		return "(all)"
	}
	return strings.Join(types, ",")
}

// messageCommands are `kairos messages publish|get`.
var messageCommands = []apiCommand{
	{name: "publish", args: []string{"TOPIC"},
		summary: "publish a message: each subscription it matches now gets a delivery; the payload comes from --payload-file FILE, or - for stdin",
		setup: func(fs *flag.FlagSet) runFunc {
			const cmd = "kairos messages publish"
			id := fs.String("id", "", "the message's id (its deliveries are ID.SUBSCRIPTION); left out, kairos makes one (and the publish is not retried unless it has a --dedup-key)")
			eventType := fs.String("event-type", "", "its event type, such as order.created, matched against the subscriptions' --event-type")
			var when whenFlags
			when.define(fs, "; neither: now")
			var life lifeFlags
			life.define(fs)
			dedupKey := fs.String("dedup-key", "", "publish nothing if a message of this key came to the topic within --dedup-window")
			var dedupWindow time.Duration
			durationFlag(fs, &dedupWindow, "dedup-window", "how long --dedup-key holds, such as 1h or 7d (default 10m)")
			payloadFile := fs.String("payload-file", "", "read the payload, any JSON, from this file; - reads stdin")
			payload := fs.String("payload", "", `the payload, any JSON, such as '{"data": {"order_id": 8412}}'`)
			labels := labelFlag{}
			fs.Var(labels, "label", "a label KEY:VALUE of its deliveries; repeat for more")
			return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
				req := client.MessageRequest{ID: *id, EventType: *eventType, Delay: client.Duration(when.delay), Labels: labels.labels(),
					DedupKey: *dedupKey, DedupWindow: client.Duration(dedupWindow), TTL: client.Duration(life.ttl), Priority: life.priority}
				if !when.runAt.t.IsZero() {
					req.RunAt = &client.Time{Time: when.runAt.t}
				}
				if !life.expiresAt.t.IsZero() {
					req.ExpiresAt = &client.Time{Time: life.expiresAt.t}
				}
				var err error
				if req.Payload, err = readPayload(cmd, out.stdin, *payloadFile, *payload); err != nil {
					return err
				}
				p, err := c.Publish(ctx, args[0], req)
				if err != nil {
					return err
				}
				return out.print(p, func(w io.Writer) {
					verb := "published"
					if p.Result != "" {
						verb = p.Result // duplicate: nothing was published
					}
					fmt.Fprintf(w, "%s message %s to %s: %d deliveries", verb, p.ID, p.Topic, len(p.Deliveries))
					if !p.RunAt.IsZero() {
						fmt.Fprintf(w, ", at %s", formatTime(p.RunAt))
					}
					fmt.Fprintln(w)
					if len(p.Deliveries) > 0 {
						fmt.Fprintln(w, "\nSUBSCRIPTION\tJOB")
						for _, d := range p.Deliveries {
							fmt.Fprintf(w, "%s\t%s\n", d.Subscription, d.JobID)
						}
					}
				})
			}
		}},
	{name: "get", args: []string{"TOPIC", "ID"}, summary: "show a message and each delivery's state", setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, c *client.Client, args []string, out *printer) error {
			m, err := c.GetMessage(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(m, func(w io.Writer) { showMessage(w, m) })
		}
	}},
}

func showMessage(w io.Writer, m *client.Message) {
	fmt.Fprintf(w, "id\t%s\ntopic\t%s\ntenant\t%s\nevent_type\t%s\nrun_at\t%s\ncreated_at\t%s\n",
		m.ID, m.Topic, m.Tenant, orDash(m.EventType), formatTime(m.RunAt), formatTime(m.CreatedAt))
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		fmt.Fprintf(w, "label\t%s:%s\n", k, m.Labels[k])
	}
	if len(m.Payload) > 0 {
		fmt.Fprintf(w, "payload\t%s\n", m.Payload)
	}
	if len(m.Deliveries) == 0 {
		fmt.Fprintln(w, "\nno deliveries: no subscription matched")
		return
	}
	fmt.Fprintln(w, "\nSUBSCRIPTION\tJOB\tSTATE\tATTEMPTS\tNEXT RUN\tDONE AT\tLAST ATTEMPT")
	for _, d := range m.Deliveries {
		state := string(d.State)
		if state == "" {
			state = "(record gone)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Subscription, d.JobID, state, strconv.Itoa(d.Attempts),
			formatTime(d.NextRunAt), formatTime(d.DoneAt), lastAttempt(d.LastAttempt))
	}
}

// stringsFlag collects a repeated flag's values.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// optBool is a boolean flag that knows whether it was given: v is nil
// when it was not.
type optBool struct{ v *bool }

func (b *optBool) String() string {
	if b == nil || b.v == nil {
		return ""
	}
	return strconv.FormatBool(*b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: want true or false", s)
	}
	b.v = &v
	return nil
}

func (b *optBool) IsBoolFlag() bool { return true }
