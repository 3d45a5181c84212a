package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kairos-sh/kairos/internal/server"
)

// migrate moves the data under KAIROS_PREFIX to the layout this kairos
// reads, in place, and says what it did. It takes the flags of serve
// (Redis URL, prefix, TLS); every kairos must be stopped first.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	env := func(name string) string {
		if name == "KAIROS_ROLES" {
			return "scanner" // no API: no auth secret needed
		}
		return getenv(name)
	}
	cfg, err := server.ParseConfig(args, env, usageOut(args, stdout, stderr))
	if err != nil {
		return err
	}
	res, err := server.Migrate(ctx, cfg, server.NewLogger(cfg, stderr))
	if err != nil {
		return err
	}
	switch {
	case res.From == 0:
		_, err = fmt.Fprintf(stdout, "no kairos data under prefix %q: nothing to migrate\n", cfg.Prefix)
	case res.From == res.To:
		_, err = fmt.Fprintf(stdout, "prefix %q is at data layout %d already: nothing to migrate\n", cfg.Prefix, res.To)
	default:
		_, err = fmt.Fprintf(stdout, "prefix %q migrated from data layout %d to %d: %d schedules rewritten\n", cfg.Prefix, res.From, res.To, res.Schedules)
	}
	return err
}
