package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/duration"
)

// token prints an API token for a tenant, signed with KAIROS_AUTH_SECRET.
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kairos token", flag.ContinueOnError)
	fs.SetOutput(usageOut(args, stdout, stderr))
	tenant := fs.String("tenant", "", "the tenant the token acts for (its sub claim)")
	admin := fs.Bool("admin", false, "let the token see every tenant (the admin page)")
	ttl := duration.Flag(fs, "ttl", 24*time.Hour, "how long the token is valid, such as 720h or 30d; 0 means it never expires (revoke it through POST /v1/tenants/{tenant}/revocations)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secret := getenv("KAIROS_AUTH_SECRET")
	if secret == "" {
		return errors.New("KAIROS_AUTH_SECRET is not set: tokens are signed with the secret the server uses")
	}
	if *tenant == "" {
		return errors.New("--tenant is required")
	}
	if *ttl < 0 {
		return errors.New("--ttl must not be negative")
	}
	tok, err := auth.New([]byte(secret), nil).Mint(*tenant, *admin, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	var c auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err == nil {
		// on stderr, so that $(kairos token ...) holds the token alone
		fmt.Fprintf(stderr, "token id (jti): %s; an admin revokes this token alone with POST /v1/tenants/%s/revocations {\"jti\": \"%s\"}\n", c.ID, *tenant, c.ID)
	}
	return nil
}
