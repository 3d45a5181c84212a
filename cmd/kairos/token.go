package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/duration"
)

// token prints an API token for a tenant: signed here with
// KAIROS_AUTH_SECRET, or minted by a running kairos (POST /v1/tokens) with
// an admin token when --url names it (or KAIROS_URL does and no secret is
// set), so that no laptop needs the secret. The token alone goes to
// stdout; its id, which revokes it, to stderr.
func token(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kairos token", flag.ContinueOnError)
	fs.SetOutput(usageOut(args, stdout, stderr))
	tenant := fs.String("tenant", "", "the tenant the token acts for (its sub claim)")
	admin := fs.Bool("admin", false, "let the token see every tenant (the admin page)")
	ttl := duration.Flag(fs, "ttl", 24*time.Hour, "how long the token is valid, such as 720h or 30d; 0 means it never expires (signed locally only; revoke it through POST /v1/tenants/{tenant}/revocations). With --url and no --ttl the server picks 24h, or less when its cap (KAIROS_MAX_TOKEN_TTL) or the admin token's expiry is nearer")
	base := fs.String("url", "", "mint through the kairos listening there (POST /v1/tokens) with an admin token, instead of signing with KAIROS_AUTH_SECRET; default $KAIROS_URL when no secret is set")
	adminToken := fs.String("token", "", "with --url: the admin token to mint with (default $KAIROS_TOKEN, which keeps it out of the process list)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("kairos token", "unexpected arguments: %q", fs.Args())
	}
	if *tenant == "" {
		return usagef("kairos token", "--tenant is required")
	}
	if *ttl < 0 {
		return usagef("kairos token", "--ttl must not be negative")
	}
	secret := getenv("KAIROS_AUTH_SECRET")
	if *base == "" && secret == "" {
		*base = getenv("KAIROS_URL")
	}
	if *base != "" {
		// without --ttl the server picks: 24h, or less when its cap or the
		// admin token's own expiry is nearer
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "ttl" })
		if given && *ttl == 0 {
			return usagef("kairos token", "--ttl 0 (no expiry) is for tokens signed with KAIROS_AUTH_SECRET; through the API a token lasts 1m to the server's cap (KAIROS_MAX_TOKEN_TTL, default 90d), and never past the admin token's own expiry")
		}
		if !given {
			*ttl = 0
		}
		return mintRemote(ctx, *base, cmp.Or(*adminToken, getenv("KAIROS_TOKEN")), *tenant, *admin, *ttl, stdout, stderr)
	}
	if secret == "" {
		return errors.New("KAIROS_AUTH_SECRET is not set: tokens are signed with the secret the server uses; " +
			"or mint through a running kairos with --url URL and an admin token in KAIROS_TOKEN")
	}
	tok, err := auth.New([]byte(secret), nil).Mint(*tenant, *admin, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	var c auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err == nil {
		printTokenID(stderr, *tenant, c.ID)
	}
	return nil
}

// mintRemote mints a token through POST /v1/tokens at base with an admin
// token; ttl 0 leaves it to the server.
func mintRemote(ctx context.Context, base, adminToken, tenant string, admin bool, ttl time.Duration, stdout, stderr io.Writer) error {
	if adminToken == "" {
		return usagef("kairos token", "minting through %s needs an admin token: set KAIROS_TOKEN (or --token)", base)
	}
	c, err := client.New(base, client.WithToken(adminToken), client.WithUserAgent("kairos-cli"),
		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		return usagef("kairos token", "%v", err)
	}
	t, err := c.MintToken(ctx, client.TokenRequest{Tenant: tenant, Admin: admin, TTL: client.Duration(ttl)})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t.Token)
	printTokenID(stderr, tenant, t.JTI)
	fmt.Fprintf(stderr, "expires at %s\n", t.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

// printTokenID says on stderr, so that $(kairos token ...) holds the token
// alone, how to revoke the token.
func printTokenID(w io.Writer, tenant, jti string) {
	fmt.Fprintf(w, "token id (jti): %s; an admin revokes this token alone with POST /v1/tenants/%s/revocations {\"jti\": \"%s\"}\n", jti, tenant, jti)
}
