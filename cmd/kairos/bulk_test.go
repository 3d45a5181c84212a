package main

import (
	"strings"
	"testing"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// `kairos jobs create --label`, `jobs list --label`, `jobs bulk` and
// `operations get` against a running kairos.
func TestCLIBulkAndLabels(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	k.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL)
	for _, id := range []string{"a", "b", "c"} {
		args := []string{"jobs", "create", "orders", "--id", id, "--delay", "1h", "--label", "env:prod"}
		if id != "c" {
			args = append(args, "--label", "customer:c-1")
		}
		k.ok("", args...)
	}
	var page client.JobList
	k.json(&page, "jobs", "list", "orders", "--label", "env:prod", "--label", "customer:c-1")
	if len(page.Jobs) != 2 || page.Jobs[0].Labels["customer"] != "c-1" {
		t.Fatalf("jobs list --label: %+v", page.Jobs)
	}
	k.fails(exitUsage, []string{"jobs", "bulk", "orders", "--action", "cancel"}, "give a filter")
	k.fails(exitUsage, []string{"jobs", "bulk", "orders", "--action", "delete", "--state", "dead"}, "--action")
	var op client.Operation
	k.json(&op, "jobs", "bulk", "orders", "--action", "cancel", "--label", "customer:c-1", "--wait")
	if op.State != client.OperationDone || op.Done != 2 || op.Matched != 2 {
		t.Fatalf("jobs bulk --wait: %+v", op)
	}
	out := k.ok("", "operations", "get", op.ID)
	if !strings.Contains(out, "cancel of topic orders, done: 2 matched, 2 done, 0 failed") {
		t.Errorf("operations get: %q", out)
	}
	page = client.JobList{}
	k.json(&page, "jobs", "list", "orders", "--state", "scheduled")
	if len(page.Jobs) != 1 || page.Jobs[0].ID != "c" {
		t.Errorf("scheduled after the bulk cancel: %+v", page.Jobs)
	}
	page = client.JobList{}
	k.json(&page, "jobs", "list", "orders", "--state", "cancelled")
	if len(page.Jobs) != 2 || page.Jobs[0].State != client.StateCancelled {
		t.Errorf("cancelled after the bulk cancel: %+v", page.Jobs)
	}
}
