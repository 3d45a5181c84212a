package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// FanoutConfig sizes the fanout scenario.
type FanoutConfig struct {
	Subscriptions int           // subscriptions every message matches; default 10
	Rate          int           // messages published a second; default 200
	Over          time.Duration // how long they are published for; default 10s
	Lead          time.Duration // how long before its run_at a message is published; default 1s
	Filtered      int           // subscriptions with filters no message matches, of the matching phase; default 1,000
	NoMatch       int           // messages published to them; default 1,000
	Pending       int           // messages published an hour ahead for the memory figures; default 2,000
}

func (c FanoutConfig) withDefaults() FanoutConfig {
	if c.Subscriptions <= 0 {
		c.Subscriptions = 10
	}
	if c.Rate <= 0 {
		c.Rate = 200
	}
	if c.Over <= 0 {
		c.Over = 10 * time.Second
	}
	if c.Lead <= 0 {
		c.Lead = time.Second
	}
	if c.Filtered <= 0 {
		c.Filtered = 1000
	}
	if c.NoMatch <= 0 {
		c.NoMatch = 1000
	}
	if c.Pending <= 0 {
		c.Pending = 2000
	}
	return c
}

// FanoutResult is the fanout scenario (issue 47): messages published to a
// topic's subscriptions against plain jobs at the same delivery rate, what
// a subscription and a delivery cost Redis, and a publish that matches
// none of 1,000 filtered subscriptions.
type FanoutResult struct {
	Subscriptions int     `json:"subscriptions"`
	Messages      int     `json:"messages"`
	Rate          int     `json:"publishes_per_sec"`
	PublishP50MS  float64 `json:"publish_p50_ms"`
	PublishP99MS  float64 `json:"publish_p99_ms"`
	PublishMaxMS  float64 `json:"publish_max_ms"`
	// Delivery is that of the deliveries, each measured against its
	// message's run_at; Plain that of the plain jobs of the baseline.
	Delivery Delivery `json:"delivery"`
	Plain    Delivery `json:"plain_delivery"`
	// Redis CPU per delivery's life, and per plain job's, with the same
	// tail (--life-tail).
	Life                  Usage   `json:"cpu_life"`
	RedisCPUPerDeliveryUS float64 `json:"redis_cpu_per_delivery_us,omitempty"`
	PlainRedisCPUPerJobUS float64 `json:"plain_redis_cpu_per_job_us,omitempty"`
	// Memory: INFO used_memory growth per subscription put, per delivery
	// pending (its share of its message's record included) and per plain
	// job pending with the same payload.
	MemoryPerSubscription float64 `json:"memory_per_subscription_bytes,omitempty"`
	MemoryPerDelivery     float64 `json:"memory_per_delivery_bytes,omitempty"`
	MemoryPerPlainJob     float64 `json:"memory_per_plain_job_bytes,omitempty"`
	// The matching phase: publishes that match none of Filtered
	// subscriptions, one at a time.
	Filtered int `json:"filtered_subscriptions"`
	NoMatch  int `json:"no_match_publishes"`
	// NoMatchCommands is what Redis ran per such publish (INFO
	// commandstats: a script's commands count one by one, the script call
	// once more), by command.
	NoMatchCommands []CommandCount `json:"no_match_commands_per_publish"`
	// NoMatchOwnCommands counts those commands but the caches' reads.
	NoMatchOwnCommands  float64 `json:"no_match_commands_own_per_publish"`
	NoMatchP99MS        float64 `json:"no_match_publish_p99_ms"`
	NoMatchProcessCPUMS float64 `json:"no_match_process_cpu_per_publish_ms"`
	Checks              []Check `json:"checks"`
}

// metricNoMatch is the check of what a publish that matches nothing costs.
const metricNoMatch = "Redis commands per publish matching none"

// fanSub names subscription k of the scenario.
func fanSub(k int) string { return "s" + strconv.Itoa(k) }

// Fanout runs the fanout scenario on the bench's topic, then removes the
// subscriptions it made.
func (b *Bench) Fanout(ctx context.Context, c FanoutConfig) (r *FanoutResult, err error) {
	c = c.withDefaults()
	n := c.Rate * int(c.Over/time.Second)
	r = &FanoutResult{Subscriptions: c.Subscriptions, Messages: n, Rate: c.Rate, Filtered: c.Filtered, NoMatch: c.NoMatch}

	// the plain jobs are created by calls of as many jobs as a publish's
	// deliveries, which it creates in one batch
	b.progressf("fanout: baseline, %s plain jobs due over %v, %d a create call", fmtInt(int64(n*c.Subscriptions)), c.Over, c.Subscriptions)
	plain, err := b.precision(ctx, n*c.Subscriptions, c.Over, precisionRun{phase: "fanout-plain", size: c.Subscriptions, profile: "fanout-plain"})
	if err != nil {
		return r, fmt.Errorf("fanout, plain jobs: %w", err)
	}
	r.Plain, r.PlainRedisCPUPerJobUS = plain.Delivery, plain.RedisCPUPerJobUS

	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		for k := range c.Subscriptions {
			if _, derr := b.api.DeleteSubscription(cctx, b.topic, fanSub(k)); derr != nil && !client.IsNotFound(derr) && err == nil {
				err = fmt.Errorf("fanout: delete subscription %s: %w", fanSub(k), derr)
			}
		}
	}()
	for k := range c.Subscriptions {
		req := client.SubscriptionRequest{URL: b.rec.URL + "?sub=" + fanSub(k),
			// every message matches: the filter's cost is in the figures
			Filter: json.RawMessage(`{"run": {"$exists": true}}`)}
		if _, _, err := b.api.PutSubscription(ctx, b.topic, fanSub(k), req); err != nil {
			return r, fmt.Errorf("fanout: put subscription %s: %w", fanSub(k), err)
		}
	}
	if err := b.fanoutFire(ctx, c, n, r); err != nil {
		return r, err
	}
	if err := b.fanoutMemory(ctx, c, r); err != nil {
		return r, err
	}
	if err := b.fanoutNoMatch(ctx, c, r); err != nil {
		return r, err
	}
	r.Checks = []Check{
		atMost("publish p99", r.PublishP99MS, 10, " ms"),
		atMost("delivery lateness p99", r.Delivery.P99MS, 5, " ms"),
		atMost("deliveries fired early", float64(r.Delivery.Early), 0, ""),
		atMost("deliveries missing", float64(r.Delivery.Missing), 0, ""),
		atMost("deliveries duplicated", float64(r.Delivery.Duplicated), 0, ""),
		atMost("memory per subscription", r.MemoryPerSubscription, 1024, " B"),
		atMost(metricNoMatch, r.NoMatchOwnCommands, 1, ""),
	}
	if r.PlainRedisCPUPerJobUS > 0 && r.RedisCPUPerDeliveryUS > 0 {
		r.Checks = append(r.Checks, atMost("Redis CPU per delivery / plain job", r.RedisCPUPerDeliveryUS/r.PlainRedisCPUPerJobUS, 1.2, "x"))
	}
	return r, nil
}

// fanoutFire publishes n messages at c.Rate, each due c.Lead after it is
// published, and measures their deliveries.
func (b *Bench) fanoutFire(ctx context.Context, c FanoutConfig, n int, r *FanoutResult) error {
	subs := c.Subscriptions
	start := time.Now().Add(200 * time.Millisecond)
	t0 := b.now().Add(200*time.Millisecond + c.Lead).Truncate(time.Millisecond).UnixMilli()
	every := time.Second / time.Duration(c.Rate)
	due := func(i int) int64 { return t0 + (time.Duration(i) * every).Milliseconds() }
	s := b.newSpec("fan", due)
	// A delivery's payload is its message's: its number comes from its
	// job id, "<message id>.<subscription>".
	run := b.rec.ExpectOccurrences(s.run, n*subs, func(i int, jobID string) (int, int64, bool) {
		_, sub, ok := strings.Cut(jobID, ".s")
		k, err := strconv.Atoi(sub)
		if !ok || err != nil || k < 0 || k >= subs || i < 0 || i >= n {
			return 0, 0, false
		}
		return i*subs + k, due(i), true
	})
	stray := b.rec.Stray()
	b.progressf("fanout: %s messages at %d/s to %d subscriptions each", fmtInt(int64(n)), c.Rate, subs)
	life := b.mark(ctx)
	l, err := b.load(ctx, s, n, 1, loadOpts{
		pace: func(k int) time.Time { return start.Add(time.Duration(k) * every) },
		send: func(ctx context.Context, lo, _ int) error {
			at := client.Time{Time: time.UnixMilli(due(lo))}
			p, err := b.api.Publish(ctx, b.topic, client.MessageRequest{ID: s.id(lo), RunAt: &at, Payload: appendPayload(nil, s.run, lo, due(lo))})
			if err == nil && len(p.Deliveries) != subs {
				err = fmt.Errorf("message %s: %d deliveries, want %d", s.id(lo), len(p.Deliveries), subs)
			}
			return err
		}})
	if err != nil {
		return fmt.Errorf("fanout: publish: %w", err)
	}
	r.PublishP50MS, r.PublishP99MS, r.PublishMaxMS = latencyMS(l.Lat)
	b.await(ctx, run, n*subs, time.UnixMilli(due(n-1)), 500*time.Millisecond)
	if b.cfg.LifeTail > 0 {
		b.progressf("fanout: counting Redis CPU for %v more: the work the deliveries left behind", b.cfg.LifeTail)
		sleep(ctx, b.cfg.LifeTail)
	}
	r.Life = b.usage(ctx, life)
	r.RedisCPUPerDeliveryUS = r.Life.redisUSPerJob(n * subs)
	r.Delivery = run.Delivery(b.offset, b.rec.Stray()-stray)
	return ctx.Err()
}

// latencyMS returns the p50, p99 and max of calls' latencies, in ms.
func latencyMS(lat []time.Duration) (p50, p99, most float64) {
	ns := make([]int64, len(lat))
	for i, d := range lat {
		ns[i] = int64(d)
	}
	q := quantiles(ns, 0.5, 0.99, 1)
	return nsToMS(q[0]), nsToMS(q[1]), nsToMS(q[2])
}

// fanoutMemory publishes c.Pending messages an hour ahead, then as many
// plain jobs as they made deliveries, with the same payloads, and compares
// Redis's memory growth; both are removed.
func (b *Bench) fanoutMemory(ctx context.Context, c FanoutConfig, r *FanoutResult) error {
	if b.t.Redis == nil {
		return nil
	}
	b.settleMemory(ctx)
	m0, _ := b.usedMemory(ctx)
	at := b.now().Add(time.Hour).UnixMilli()
	s := b.newSpec("fanmem", func(int) int64 { return at })
	b.progressf("fanout: %s messages pending an hour ahead, for their memory", fmtInt(int64(c.Pending)))
	_, err := b.load(ctx, s, c.Pending, 1, loadOpts{send: func(ctx context.Context, lo, _ int) error {
		t := client.Time{Time: time.UnixMilli(at)}
		_, err := b.api.Publish(ctx, b.topic, client.MessageRequest{ID: s.id(lo), RunAt: &t, Payload: appendPayload(nil, s.run, lo, at)})
		return err
	}})
	m1, _ := b.usedMemory(ctx)
	deliveries := c.Pending * c.Subscriptions
	r.MemoryPerDelivery = float64(m1-m0) / float64(deliveries)
	// the deliveries go with the subscriptions' delete (a bulk cancel);
	// dropped here at once where the tool can, so that the plain jobs'
	// baseline starts clean
	if b.t.DropJobs != nil {
		if _, derr := b.t.DropJobs(ctx); derr != nil && err == nil {
			err = derr
		}
		b.settleMemory(ctx)
	}
	if err != nil {
		return fmt.Errorf("fanout: pending messages: %w", err)
	}
	// plain jobs as the deliveries are, but for being deliveries: due at
	// one instant, each with a label as long as a delivery's, its value
	// one of as many as there are subscriptions (the API keeps the
	// subscription label for deliveries): "a plain job plus its label"
	p, err := b.loadPending(ctx, "fanplain", deliveries, time.Hour, time.Millisecond, 0, func(i int) map[string]string {
		return map[string]string{"subscriber__": fanSub(i % c.Subscriptions)}
	})
	if p != nil {
		r.MemoryPerPlainJob = p.MemoryPerJob
		if derr := b.dropPending(ctx, p); derr != nil && err == nil {
			err = derr
		}
	}
	return err
}

// fanoutNoMatch puts c.Filtered subscriptions whose filters match none of
// the messages on a topic of their own, publishes c.NoMatch messages to it
// one at a time, and counts what a publish cost.
func (b *Bench) fanoutNoMatch(ctx context.Context, c FanoutConfig, r *FanoutResult) (err error) {
	topic := b.topic + "-filtered"
	if _, _, err := b.api.PutTopic(ctx, topic, client.TopicRequest{CallbackURL: b.rec.URL}); err != nil {
		return fmt.Errorf("fanout: put topic %s: %w", topic, err)
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if derr := b.api.DeleteTopic(cctx, topic); derr != nil && err == nil {
			err = fmt.Errorf("fanout: delete topic %s: %w", topic, derr)
		}
	}()
	b.progressf("fanout: %s subscriptions with filters, and %s messages that match none", fmtInt(int64(c.Filtered)), fmtInt(int64(c.NoMatch)))
	m0, memOK := b.usedMemory(ctx)
	err = b.forEach(ctx, c.Filtered, func(ctx context.Context, k int) error {
		f := fmt.Sprintf(`{"data.customer.tier": {"$in": ["gold-%d", "platinum-%d"]}, "data.total": {"$gte": %d}, "$or": [{"event": "order.created"}, {"data.region": {"$prefix": "eu-%d"}}]}`, k, k, k, k)
		_, _, err := b.api.PutSubscription(ctx, topic, fanSub(k), client.SubscriptionRequest{URL: b.rec.URL + "?sub=" + fanSub(k), Filter: json.RawMessage(f),
			EventTypes: []string{"order.created", "order.paid"}, CallbackSettings: client.CallbackSettings{Headers: map[string]string{"X-Team": "team-" + strconv.Itoa(k)}}})
		return err
	})
	if err != nil {
		return fmt.Errorf("fanout: put the filtered subscriptions: %w", err)
	}
	if m1, ok := b.usedMemory(ctx); ok && memOK {
		r.MemoryPerSubscription = float64(m1-m0) / float64(c.Filtered)
	}
	payload := json.RawMessage(`{"event": "order.created", "data": {"customer": {"tier": "bronze"}, "total": -1, "region": "us-east"}}`)
	publish := func(ctx context.Context, id string) error {
		p, err := b.api.Publish(ctx, topic, client.MessageRequest{ID: id, EventType: "order.created", Payload: payload})
		if err == nil && len(p.Deliveries) > 0 {
			err = errors.New("a message meant to match no subscription matched " + p.Deliveries[0].Subscription)
		}
		return err
	}
	// the first publish reads the subscriptions into the API's cache
	if err := publish(ctx, "warm-"+randomID()); err != nil {
		return fmt.Errorf("fanout: publish: %w", err)
	}
	calls0, _, statsOK := b.commandStats(ctx)
	mark := b.mark(ctx)
	t0 := time.Now()
	var lat []time.Duration
	run := randomID()
	for i := range c.NoMatch {
		t := time.Now()
		if err := publish(ctx, "nomatch-"+run+"-"+strconv.Itoa(i)); err != nil {
			return fmt.Errorf("fanout: publish: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	took := time.Since(t0)
	u := b.usage(ctx, mark)
	calls1, _, ok1 := b.commandStats(ctx)
	// what kairos and this tool send meanwhile anyway (the scanner, the
	// readings of INFO and of kairos's metrics), over as long a window
	// with no publish, read the same way, is taken off
	idle := b.mark(ctx)
	sleep(ctx, took)
	b.usage(ctx, idle)
	calls2, _, ok2 := b.commandStats(ctx)
	_, r.NoMatchP99MS, _ = latencyMS(lat)
	r.NoMatchProcessCPUMS = u.ProcessPct / 100 * u.Seconds * 1000 / float64(c.NoMatch)
	if statsOK && ok1 && ok2 {
		r.NoMatchCommands, r.NoMatchOwnCommands = perPublish(calls0, calls1, calls2, c.NoMatch)
	}
	return nil
}

// perPublish returns the commands run per publish, most first, between
// the readings before and after the publishes, less those run over as
// long a window after them (idle: what is sent anyway); and the sum of
// them but the caches' reads (cacheRead): what a publish itself costs.
func perPublish(before, after, idle map[string]int64, n int) ([]CommandCount, float64) {
	var rows []CommandCount
	own := 0.0
	for name, v := range after {
		d := (v - before[name]) - (idle[name] - v)
		if d <= 0 {
			continue
		}
		per := float64(d) / float64(n)
		rows = append(rows, CommandCount{Command: name, Executed: per})
		if !cacheRead(name) {
			own += per
		}
	}
	slices.SortFunc(rows, func(a, b CommandCount) int {
		if a.Executed != b.Executed {
			if a.Executed > b.Executed {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Command, b.Command)
	})
	return rows, own
}

// cacheRead reports whether command name is one the API's caches of a
// topic (hget) and of its subscriptions (hgetall, smembers) read with:
// once a second a topic at most, whatever the publish rate.
func cacheRead(name string) bool { return name == "hgetall" || name == "smembers" || name == "hget" }

// Tables prints the result.
func (r *FanoutResult) Tables() []Table {
	t := Table{Title: fmt.Sprintf("fanout: %s messages at %d/s, each to %d subscriptions, against as many plain jobs; a publish matching none of %s filtered subscriptions",
		fmtInt(int64(r.Messages)), r.Rate, r.Subscriptions, fmtInt(int64(r.Filtered))),
		Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	check := func(metric string) Check {
		c, _ := findCheck(r.Checks, metric)
		return c
	}
	t.Rows = [][]string{
		{"publish p50 / max", fmtMS(r.PublishP50MS) + " / " + fmtMS(r.PublishMaxMS), "", ""},
		checkRow("publish p99", fmtMS(r.PublishP99MS), check("publish p99")),
		{"deliveries: lateness p50 / max", fmtMS(r.Delivery.P50MS) + " / " + fmtMS(r.Delivery.MaxMS), "", ""},
		checkRow("deliveries: lateness p99", fmtMS(r.Delivery.P99MS), check("delivery lateness p99")),
		{"plain jobs: lateness p99 / max", fmtMS(r.Plain.P99MS) + " / " + fmtMS(r.Plain.MaxMS), "", ""},
		{"deliveries delivered", fmtInt(int64(r.Delivery.Delivered)) + " / " + fmtInt(int64(r.Delivery.Jobs)), "", ""},
		checkRow("deliveries fired early", fmtInt(int64(r.Delivery.Early)), check("deliveries fired early")),
		checkRow("deliveries missing", fmtInt(int64(r.Delivery.Missing)), check("deliveries missing")),
		checkRow("deliveries duplicated", fmtInt(int64(r.Delivery.Duplicated)), check("deliveries duplicated")),
		{"Redis CPU per delivery life / per plain job life", fmtUS(r.RedisCPUPerDeliveryUS) + " / " + fmtUS(r.PlainRedisCPUPerJobUS), "", ""},
	}
	if c, ok := findCheck(r.Checks, "Redis CPU per delivery / plain job"); ok {
		t.Rows = append(t.Rows, checkRow("  ratio", fmt.Sprintf("%.2fx", c.Value), c))
	}
	t.Rows = append(t.Rows,
		checkRow("Redis memory per subscription (filter, event types, a header)", fmtBytes(r.MemoryPerSubscription), check("memory per subscription")),
		[]string{"Redis memory per delivery pending / per plain job pending with a label as long", fmtBytes(r.MemoryPerDelivery) + " / " + fmtBytes(r.MemoryPerPlainJob), "", ""},
		checkRow(metricNoMatch, fmt.Sprintf("%.3f", r.NoMatchOwnCommands), check(metricNoMatch)),
		[]string{"publish matching none: p99, CPU of the tool and kairos per publish", fmtMS(r.NoMatchP99MS) + ", " + fmt.Sprintf("%.3f ms", r.NoMatchProcessCPUMS), "", ""},
	)
	var cmds []string
	for _, c := range r.NoMatchCommands {
		cmds = append(cmds, fmt.Sprintf("%s %.2f", c.Command, c.Executed))
	}
	t.Notes = []string{
		"lateness = arrival at the bench's receiver minus the message's run_at; the plain jobs are due over the same window at the same delivery rate, created by batches of as many jobs as a message's deliveries",
		"Redis CPU per life = growth of INFO used_cpu from the first create or publish until the last delivery has settled (and --life-tail after), / deliveries or jobs",
		"memory per delivery = used_memory growth over publishing the pending messages / their deliveries: the message's record is shared among them",
		"commands per publish matching none (INFO commandstats; a script's own commands count too): " + strings.Join(cmds, ", ") +
			"; less what ran over as long a window with no publish (the scanner, this tool's readings); hget, hgetall and smembers are the API's caches of the topic and its subscriptions, read once a second at most",
		"the CPU of a publish matching none is this tool's and kairos's together: an upper bound of kairos's matching",
	}
	return []Table{t}
}
