package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
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
		if err := printBanner(ctx, stdout, cfg, in); err != nil {
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

// bannerTenant is the tenant of the admin token the banner prints, whose
// signing secret it shows: the topics that token creates are its own.
const bannerTenant = server.DevTenant

// printBanner tells a user trying kairos on the embedded Redis where it
// runs, how to get in, the signing secret to check callbacks with, and
// whether callbacks to a receiver on this machine are allowed. It is the
// one place kairos prints a secret, by design: on the embedded Redis
// nothing but these dev secrets outlives the process.
func printBanner(ctx context.Context, w io.Writer, cfg server.Config, in *server.Instance) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nkairos is running at %s (embedded Redis: no job persists)\n\n", in.URL)
	if cfg.AuthSecret == "" {
		tok, err := in.Authn.Mint(bannerTenant, true, 0)
		if err != nil {
			return err
		}
		kept := "valid as long as this process runs: its secret was generated at start and dies with it"
		if in.DevSecretsFile != "" {
			kept = "its secret is kept in " + in.DevSecretsFile + ", so the token still works after a restart;\n" +
				"remove that file for new secrets, or set KAIROS_AUTH_SECRET"
		}
		// The token goes in the URL's fragment, which browsers never send:
		// the page reads it and takes it out of the address bar.
		fmt.Fprintf(&b, "Admin token (%s):\n\n  %s\n\n"+
			"Open the admin page signed in:\n  %s/#token=%s\n\nor try:\n  curl -H 'Authorization: Bearer %s' %s/v1/topics\n\n", kept, tok, in.URL, tok, tok, in.URL)
	} else {
		fmt.Fprintf(&b, "API tokens are signed with your KAIROS_AUTH_SECRET. Mint one with the same secret set:\n\n"+
			"  go run ./cmd/kairos token --tenant %s --admin     (or bin/kairos token ... after make build)\n\n"+
			"then open %s/ and paste it.\n\n", bannerTenant, in.URL)
	}
	keys, err := rdb.New(in.Client, rdb.Options{Prefix: cfg.Prefix, NewSecret: callback.NewSecret}).GetSigningKeys(ctx, bannerTenant)
	if err != nil {
		return fmt.Errorf("signing secret for the banner: %w", err)
	}
	kept := ""
	if in.DevSecretsFile != "" {
		kept = " It is kept in " + in.DevSecretsFile + " across restarts."
	}
	fmt.Fprintf(&b, "Signing secret of tenant %s (the admin token's own topics; each tenant has its own, GET /v1/signing-keys):\n\n  %s\n\n"+
		"Receivers check callbacks with it: package github.com/kairos-sh/kairos/verify, or any Standard Webhooks library.%s\n\n", bannerTenant, keys.Current, kept)
	switch {
	case cfg.DevPrivateDefault:
		b.WriteString("Callbacks to loopback and private addresses are allowed: this kairos runs on the embedded Redis and\n" +
			"listens on loopback only. Start it with --allow-private-urls=false to refuse them as production does.\n\n")
	case cfg.AllowPrivate:
		b.WriteString("Callbacks to loopback and private addresses are allowed (--allow-private-urls).\n\n")
	default:
		b.WriteString("Callbacks to localhost, loopback and private addresses are refused. To try kairos with a\n" +
			"receiver on this machine, start it with --allow-private-urls (or KAIROS_ALLOW_PRIVATE_URLS=1).\n\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}
