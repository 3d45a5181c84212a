package main

import (
	"strings"
	"testing"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestCLITenants: an admin sets, shows and resets a tenant's quota, and
// revokes its tokens, which are refused from then on.
func TestCLITenants(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	admin := kairosCLI{t: t, url: ti.url, token: ti.admin}
	acme := kairosCLI{t: t, url: ti.url, token: ti.token}

	var q client.Quota
	admin.json(&q, "tenants", "set-quota", "acme", "--max-pending", "5", "--rate", "600/1m", "--burst", "20")
	if q.MaxPending != 5 || q.Rate == nil || q.Rate.Limit != 600 || q.Burst != 20 || !q.Custom {
		t.Fatalf("quota %+v", q)
	}
	if out := acme.ok("", "tenants", "quota", "acme"); !strings.Contains(out, "600 per 1m0s (burst 20)") || !strings.Contains(out, "set by an admin") {
		t.Errorf("quota as acme reads it:\n%s", out)
	}
	acme.fails(exitError, []string{"tenants", "set-quota", "acme", "--max-pending", "9"}, "Forbidden (403)")
	admin.fails(exitUsage, []string{"tenants", "set-quota", "acme", "--rate", "fast"}, "--rate \"fast\"")
	admin.ok("", "tenants", "reset-quota", "acme")
	admin.json(&q, "tenants", "quota", "acme")
	if q.Custom || q.MaxPending != 0 {
		t.Errorf("quota after reset %+v", q)
	}

	if out := admin.ok("", "tenants", "revoke", "acme"); !strings.Contains(out, "every token of acme issued until") {
		t.Errorf("revoke:\n%s", out)
	}
	acme.fails(exitError, []string{"topics", "list"}, "token has been revoked")
	admin.fails(exitUsage, []string{"tenants", "revoke", "acme", "--jti", "x", "--issued-before", "2026-01-01T00:00:00Z"}, "not both")
}
