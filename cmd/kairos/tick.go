package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/kairos-sh/kairos/internal/duration"
	"github.com/kairos-sh/kairos/internal/server"
)

// defaultTickFor is how long a tick runs unless --for says otherwise: under
// a minute, for a trigger that fires every minute.
const defaultTickFor = 55 * time.Second

// tick runs the scanner and workers for at most --for, delivering what is
// due, then prints a JSON summary (kairos.TickSummary) on stdout: for
// platforms that only offer a scheduled trigger. It takes the flags of
// serve as well (Redis, prefix, shards, lock TTL...).
func tick(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	d, rest, err := tickFor(args)
	if err != nil {
		return err
	}
	env := func(name string) string {
		if name == "KAIROS_ROLES" {
			return "scanner,worker" // a tick runs these, and needs no auth secret
		}
		return getenv(name)
	}
	cfg, err := server.ParseConfig(rest, env, usageOut(args, stdout, stderr))
	if err != nil {
		return err
	}
	if cfg.RedisURL == "" {
		// the embedded Redis starts empty and ends with the process: a tick
		// on it would find nothing to do, and say so as if all were well
		return usagef("tick", "KAIROS_REDIS_URL is not set: a tick delivers the jobs of a Redis that outlives it; "+
			"set KAIROS_REDIS_URL (or --redis-url) to the Redis your kairos API stores jobs in")
	}
	log := server.NewLogger(cfg, stderr)
	server.TuneRuntime(getenv, log)
	sum, err := server.Tick(ctx, cfg, log, d)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(sum)
}

// tickFor takes --for D (or --for=D, -for) out of args.
func tickFor(args []string) (time.Duration, []string, error) {
	d, raw := defaultTickFor, ""
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "for" {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return 0, nil, usagef("tick", "--for needs a duration such as 55s")
			}
			i++
			val = args[i]
		}
		raw = val
	}
	if raw != "" {
		v, err := duration.Parse(raw)
		if err != nil || v <= 0 || v > 24*time.Hour {
			return 0, nil, usagef("tick", "--for %q: use a duration above 0 and at most 24h, such as 55s", raw)
		}
		d = v
	}
	return d, rest, nil
}
