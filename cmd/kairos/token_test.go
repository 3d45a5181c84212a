package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/internal/testredis"
)

func fakeEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestTokenDefaultExpiry: a token expires after 24 hours unless --ttl says
// otherwise, and --ttl 0 mints one without expiry.
func TestTokenDefaultExpiry(t *testing.T) {
	env := fakeEnv(map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef"})
	exp := func(args ...string) (time.Time, bool) {
		t.Helper()
		var out strings.Builder
		if err := token(context.Background(), args, env, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		claims := jwt.MapClaims{}
		if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(out.String()), claims); err != nil {
			t.Fatal(err)
		}
		e, err := claims.GetExpirationTime()
		if err != nil || e == nil {
			return time.Time{}, false
		}
		return e.Time, true
	}
	if e, ok := exp("--tenant", "acme"); !ok || time.Until(e) < 23*time.Hour || time.Until(e) > 25*time.Hour {
		t.Errorf("default token expires at %v (set: %v), want in 24h", e, ok)
	}
	if e, ok := exp("--tenant", "acme", "--ttl", "1h"); !ok || time.Until(e) > time.Hour+time.Minute {
		t.Errorf("--ttl 1h token expires at %v (set: %v)", e, ok)
	}
	if e, ok := exp("--tenant", "acme", "--ttl", "0"); ok {
		t.Errorf("--ttl 0 token expires at %v, want no expiry", e)
	}
}

// TestHelpExitsZero: every subcommand's -h and --help print its usage on
// stdout and are not errors; an unknown flag still is.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"serve", "token"} {
		for _, h := range []string{"-h", "--help"} {
			var out, errOut strings.Builder
			if err := run(context.Background(), []string{cmd, h}, fakeEnv(nil), nil, &out, &errOut); err != nil {
				t.Errorf("kairos %s %s: %v", cmd, h, err)
			}
			if !strings.Contains(out.String(), "-") || errOut.Len() != 0 {
				t.Errorf("kairos %s %s: stdout %q, stderr %q; want the usage on stdout", cmd, h, out.String(), errOut.String())
			}
		}
		var errOut strings.Builder
		if err := run(context.Background(), []string{cmd, "--no-such-flag"}, fakeEnv(nil), nil, io.Discard, &errOut); err == nil || errOut.Len() == 0 {
			t.Errorf("kairos %s --no-such-flag: err %v, stderr %q; want an error and the usage on stderr", cmd, err, errOut.String())
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"--help"}, fakeEnv(nil), nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "kairos token") {
		t.Errorf("kairos --help: %v, %q", err, out.String())
	}
}

func TestTokenCommand(t *testing.T) {
	var out, errOut strings.Builder
	err := token(context.Background(), []string{"--tenant", "acme", "--admin", "--ttl", "1h"}, fakeEnv(map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef"}), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimSpace(out.String()), "."); len(parts) != 3 {
		t.Fatalf("token output %q is not a JWT", out.String())
	}
	if err := token(context.Background(), []string{"--tenant", "acme"}, fakeEnv(nil), &out, &errOut); err == nil || !strings.Contains(err.Error(), "KAIROS_AUTH_SECRET") {
		t.Fatalf("without a secret: %v", err)
	}
	if err := token(context.Background(), []string{"--tenant", "bad/name"}, fakeEnv(map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef"}), &out, &errOut); err == nil {
		t.Fatal("a tenant with a slash was accepted")
	}
}

// TestTokenHasJTI: every token carries a jti of its own, printed on
// stderr (stdout holds the token alone).
func TestTokenHasJTI(t *testing.T) {
	env := fakeEnv(map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef"})
	seen := map[string]bool{}
	for range 3 {
		var out, errOut strings.Builder
		if err := token(context.Background(), []string{"--tenant", "acme"}, env, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		var c jwt.RegisteredClaims
		if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(out.String()), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == "" || seen[c.ID] || !strings.Contains(errOut.String(), "token id (jti): "+c.ID) {
			t.Fatalf("jti %q (seen before: %v), stderr %q", c.ID, seen[c.ID], errOut.String())
		}
		seen[c.ID] = true
	}
}

// TestTokenThroughAPI: `kairos token --url` mints through POST /v1/tokens
// with the admin token of KAIROS_TOKEN (or --token), without the secret;
// the token works for its tenant, and mistakes are refused with a message
// that says what to do.
func TestTokenThroughAPI(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	mint := func(env map[string]string, args ...string) (string, string, int) {
		t.Helper()
		var out, errOut strings.Builder
		code := runMain(context.Background(), append([]string{"token"}, args...), fakeEnv(env), nil, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	out, errOut, code := mint(map[string]string{"KAIROS_TOKEN": ti.admin}, "--url", ti.url, "--tenant", "acme", "--ttl", "30m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	tok := strings.TrimSpace(out)
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil || c.Subject != "acme" || c.ExpiresAt == nil ||
		time.Until(c.ExpiresAt.Time) > 30*time.Minute+time.Minute || !strings.Contains(errOut, "token id (jti): "+c.ID) {
		t.Fatalf("minted %q (claims %+v, %v), stderr %q", tok, c, err, errOut)
	}
	acme := kairosCLI{t: t, url: ti.url, token: tok}
	acme.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL+"/hook")
	acme.fails(exitError, []string{"tenants", "quota", "other"}, "Forbidden (403)")

	// KAIROS_URL alone (no secret here) picks the API; --token beats KAIROS_TOKEN.
	if _, errOut, code := mint(map[string]string{"KAIROS_URL": ti.url, "KAIROS_TOKEN": "not-a-token"}, "--token", ti.admin, "--tenant", "acme"); code != 0 {
		t.Fatalf("KAIROS_URL and --token: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"no admin token", nil, []string{"--url", ti.url, "--tenant", "acme"}, exitUsage, "needs an admin token: set KAIROS_TOKEN"},
		{"a tenant token", map[string]string{"KAIROS_TOKEN": ti.token}, []string{"--url", ti.url, "--tenant", "acme"}, exitError, "admin token"},
		{"bad tenant", map[string]string{"KAIROS_TOKEN": ti.admin}, []string{"--url", ti.url, "--tenant", "a/b"}, exitError, "tenant"},
		{"no expiry", map[string]string{"KAIROS_TOKEN": ti.admin}, []string{"--url", ti.url, "--tenant", "acme", "--ttl", "0"}, exitUsage, "--ttl 0"},
		{"too long", map[string]string{"KAIROS_TOKEN": ti.admin}, []string{"--url", ti.url, "--tenant", "acme", "--ttl", "9000h"}, exitError, "ttl"},
		{"past the admin token", map[string]string{"KAIROS_TOKEN": ti.admin}, []string{"--url", ti.url, "--tenant", "acme", "--ttl", "2h"}, exitError,
			"may not outlive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := mint(tc.env, tc.args...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, tc.code, tc.msg)
			}
			if strings.Contains(errOut, ti.admin) {
				t.Errorf("stderr shows the admin token: %q", errOut)
			}
		})
	}
}
