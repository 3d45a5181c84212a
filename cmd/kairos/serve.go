package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kairos-sh/kairos/internal/server"
)

// serve runs the roles asked for until ctx ends, then stops them in order:
// the scanner stops claiming, workers finish in-flight callbacks within the
// grace period, the HTTP server drains, locks are released, Redis closes.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := server.ParseConfig(args, getenv, usageOut(args, stdout, stderr))
	if err != nil {
		return err
	}
	log := server.NewLogger(cfg, stderr)
	server.TuneRuntime(getenv, log)
	in, err := server.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	if cfg.Roles["api"] && cfg.RedisURL == "" {
		// The banner comes before the line that says kairos is listening, so
		// whoever waits for that line finds the token already printed.
		if err := printBanner(stdout, cfg, in); err != nil {
			in.Stop()
			return err
		}
	}
	log.Info("kairos listening", "url", in.URL, "roles", server.RoleList(cfg))
	<-ctx.Done()
	log.Info("shutting down", "grace", cfg.Grace)
	in.Stop()
	log.Info("kairos stopped")
	return nil
}

// printBanner tells a user trying kairos on the embedded Redis where it
// runs, how to get in, and how to point callbacks at a local receiver.
func printBanner(w io.Writer, cfg server.Config, in *server.Instance) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nkairos is running at %s (embedded Redis: nothing persists)\n\n", in.URL)
	if cfg.AuthSecret == "" {
		tok, err := in.Authn.Mint("admin", true, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "Admin token (valid as long as this process runs: its secret was generated at start and dies with it):\n\n  %s\n\n"+
			"Open %s/ and paste the token, or try:\n  curl -H 'Authorization: Bearer %s' %s/v1/topics\n\n", tok, in.URL, tok, in.URL)
	} else {
		fmt.Fprintf(&b, "API tokens are signed with your KAIROS_AUTH_SECRET. Mint one with the same secret set:\n\n"+
			"  go run ./cmd/kairos token --tenant admin --admin     (or bin/kairos token ... after make build)\n\n"+
			"then open %s/ and paste it.\n\n", in.URL)
	}
	if cfg.AllowPrivate {
		b.WriteString("Callbacks to loopback and private addresses are allowed (--allow-private-urls).\n\n")
	} else {
		b.WriteString("Callbacks to localhost, loopback and private addresses are refused. To try kairos with a\n" +
			"receiver on this machine, start it with --allow-private-urls (or KAIROS_ALLOW_PRIVATE_URLS=1).\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
