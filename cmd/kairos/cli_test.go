package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// cliResult is what one kairos command line did.
type cliResult struct {
	code           int
	stdout, stderr string
}

// kairosCLI runs kairos command lines against a kairos at url as tenant
// token's.
type kairosCLI struct {
	t          *testing.T
	url, token string
}

// run runs `kairos args...` with stdin, and the test's KAIROS_URL and
// KAIROS_TOKEN.
func (k kairosCLI) run(stdin string, args ...string) cliResult {
	k.t.Helper()
	var out, errOut strings.Builder
	env := fakeEnv(map[string]string{"KAIROS_URL": k.url, "KAIROS_TOKEN": k.token})
	code := runMain(context.Background(), args, env, strings.NewReader(stdin), &out, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

// ok runs args, fails the test unless it exits 0, and returns its stdout.
func (k kairosCLI) ok(stdin string, args ...string) string {
	k.t.Helper()
	r := k.run(stdin, args...)
	if r.code != 0 {
		k.t.Fatalf("kairos %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// json runs args with --json, fails the test unless it exits 0, and
// decodes its stdout into out.
func (k kairosCLI) json(out any, args ...string) {
	k.t.Helper()
	raw := k.ok("", append(args, "--json")...)
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		k.t.Fatalf("kairos %s --json: %v\n%s", strings.Join(args, " "), err, raw)
	}
}

// fails runs args and fails the test unless it exits with code and says
// each of msgs on stderr.
func (k kairosCLI) fails(code int, args []string, msgs ...string) {
	k.t.Helper()
	r := k.run("", args...)
	if r.code != code {
		k.t.Errorf("kairos %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), r.code, code, r.stderr)
	}
	for _, m := range msgs {
		if !strings.Contains(r.stderr, m) {
			k.t.Errorf("kairos %s: stderr lacks %q:\n%s", strings.Join(args, " "), m, r.stderr)
		}
	}
}

// waitState polls `kairos jobs get` until the job is in state.
func (k kairosCLI) waitState(topic, id string, state client.State) client.Job {
	k.t.Helper()
	var j client.Job
	testwait.UntilNil(k.t, 15*time.Second, func() error {
		j = client.Job{}
		if k.json(&j, "jobs", "get", topic, id); j.State != state {
			return fmt.Errorf("it is %s", j.State)
		}
		return nil
	}, fmt.Sprintf("job %s/%s %s", topic, id, state))
	return j
}

// TestCLIAgainstARunningKairos drives a kairos started in this process, on
// a real redis-server, with the command line as an operator or a script
// would: topics, jobs (the payload on stdin), listings, reschedule,
// cancel, dead letters and their replay, signing keys and stats; tables
// for people, --json parsed here, and the exit codes scripts rely on.
func TestCLIAgainstARunningKairos(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}

	out := k.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL, "--header", "X-Team=billing", "--max-attempts", "3", "--timeout", "5s")
	if !strings.Contains(out, "registered topic orders") || !strings.Contains(out, "X-Team: billing") {
		t.Errorf("topics put said:\n%s", out)
	}
	var topics struct{ Topics []client.Topic }
	k.json(&topics, "topics", "list")
	if len(topics.Topics) != 1 || topics.Topics[0].Name != "orders" || topics.Topics[0].MaxAttempts != 3 || topics.Topics[0].Timeout != client.Duration(5*time.Second) {
		t.Errorf("topics list --json: %+v", topics)
	}
	var topic client.Topic
	k.json(&topic, "topics", "get", "orders")
	if topic.CallbackURL != ti.rcvURL || topic.Headers["X-Team"] != "billing" {
		t.Errorf("topics get --json: %+v", topic)
	}
	out = k.ok("", "topics", "put", "partner", "--callback-url", ti.rcvURL, "--rate", "50/1m", "--parallelism", "3", "--flow-key", "acme-api",
		"--breaker", "4/30s")
	if !strings.Contains(out, "closed (opens after 4 failures in a row, for 30s)") {
		t.Errorf("topics put with a breaker said:\n%s", out)
	}
	if !strings.Contains(out, "rate\t50 per 1m0s") && !strings.Contains(out, "50 per 1m0s") {
		t.Errorf("topics put with flow control said:\n%s", out)
	}
	k.json(&topic, "topics", "get", "partner")
	if topic.Rate == nil || topic.Rate.Limit != 50 || topic.Rate.Period != client.Duration(time.Minute) || topic.Parallelism != 3 || topic.FlowKey != "acme-api" {
		t.Errorf("topics get partner --json: %+v", topic)
	}
	k.fails(exitUsage, []string{"topics", "put", "partner", "--callback-url", ti.rcvURL, "--rate", "fifty"}, "LIMIT/PERIOD")
	k.ok("", "topics", "delete", "partner")
	if out := k.ok("", "topics", "pause", "orders"); !strings.Contains(out, "paused topic orders") {
		t.Errorf("topics pause said: %s", out)
	}
	k.json(&topic, "topics", "get", "orders")
	if !topic.Paused {
		t.Errorf("topics get after pause: %+v", topic)
	}
	if out := k.ok("", "topics", "resume", "orders"); !strings.Contains(out, "resumed topic orders") {
		t.Errorf("topics resume said: %s", out)
	}

	// A job whose payload comes on stdin, flags after the argument.
	const payload = `{"order": 1042,  "note": "caf\u00e9"}`
	out = k.ok(payload, "jobs", "create", "orders", "--id", "j1", "--delay", "1h", "--payload-file", "-")
	if !strings.Contains(out, "created job j1 in orders: scheduled") {
		t.Errorf("jobs create said: %s", out)
	}
	var j client.Job
	k.json(&j, "jobs", "get", "orders", "j1")
	if j.State != client.StateScheduled || string(compact(t, j.Payload)) != `{"note":"café","order":1042}` {
		t.Errorf("jobs get --json: %+v, payload %s", j, j.Payload)
	}
	// The same from a file, as --json, replacing it.
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(`[1, 2, 3]`), 0o644); err != nil {
		t.Fatal(err)
	}
	k.json(&j, "jobs", "create", "orders", "--id", "j1", "--delay", "2h", "--payload-file", file)
	if j.Result != client.ResultReplaced || j.ID != "j1" {
		t.Errorf("jobs create --json again: %+v", j)
	}
	// A job with a generated id, inline payload and a time of its own.
	runAt := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Millisecond)
	k.json(&j, "jobs", "create", "--run-at", runAt.Format(time.RFC3339Nano), "orders", "--payload", `"hello"`, "--max-attempts", "2")
	if j.ID == "" || j.ID == "j1" || !j.RunAt.Equal(runAt) || j.MaxAttempts != 2 {
		t.Errorf("jobs create --run-at --json: %+v", j)
	}
	generated := j.ID

	out = k.ok("", "jobs", "list", "orders")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") ||
		!strings.Contains(out, "j1 ") || !strings.Contains(out, generated+" ") {
		t.Errorf("jobs list: a header and two jobs, got:\n%s", out)
	}
	var page client.JobList
	k.json(&page, "jobs", "list", "orders", "--limit", "1")
	if len(page.Jobs) != 1 || page.NextCursor == "" {
		t.Fatalf("jobs list --limit 1 --json: %+v", page)
	}
	var rest client.JobList
	k.json(&rest, "jobs", "list", "orders", "--limit", "1", "--cursor", page.NextCursor)
	var all client.JobList
	k.json(&all, "jobs", "list", "orders", "--limit", "1", "--all")
	if len(rest.Jobs) != 1 || rest.Jobs[0].ID == page.Jobs[0].ID || len(all.Jobs) != 2 {
		t.Errorf("paging: first %+v, next %+v, --all %+v", page.Jobs, rest.Jobs, all.Jobs)
	}
	if r := k.run("", "jobs", "list", "orders", "--limit", "1"); !strings.Contains(r.stderr, "--cursor "+page.NextCursor) {
		t.Errorf("jobs list --limit 1 does not say how to get the next page: %q", r.stderr)
	}

	before := j
	k.json(&j, "jobs", "reschedule", "orders", generated, "--delay", "10h")
	if !j.NextRunAt.After(before.RunAt.Time) {
		t.Errorf("reschedule --delay 10h: next run %v, was %v", j.NextRunAt, before.RunAt)
	}
	k.ok("", "jobs", "cancel", "orders", generated)
	k.json(&j, "jobs", "get", "orders", generated)
	if j.State != client.StateCancelled {
		t.Errorf("jobs get after jobs cancel: state %s, want cancelled", j.State)
	}
	k.fails(exitNotFound, []string{"jobs", "cancel", "orders", "no-such-job"}, "Not Found (404)")
	k.fails(exitNotFound, []string{"topics", "get", "nope"}, "Not Found (404)")

	// A job due now is delivered to the receiver.
	k.ok("", "jobs", "create", "orders", "--id", "now", "--delay", "0s")
	k.waitState("orders", "now", client.StateDelivered)

	// Create options: keep leaves j1 as it is, debounce moves it within
	// --max-delay, and a --dedup-key's second create finds the first job,
	// delivered or not.
	k.json(&j, "jobs", "create", "orders", "--id", "j1", "--delay", "5h", "--on-conflict", "keep")
	if j.Result != client.ResultKept || j.ID != "j1" {
		t.Errorf("jobs create --on-conflict keep: %+v", j)
	}
	k.json(&j, "jobs", "create", "orders", "--id", "j1", "--delay", "5h", "--on-conflict", "debounce", "--max-delay", "1d")
	if j.Result != client.ResultDebounced {
		t.Errorf("jobs create --on-conflict debounce: %+v", j)
	}
	k.fails(exitError, []string{"jobs", "create", "orders", "--id", "j1", "--on-conflict", "debounce"}, "max_delay")
	out = k.ok("", "jobs", "create", "orders", "--dedup-key", "order-1042", "--dedup-window", "1d", "--delay", "0s")
	first := strings.Fields(out)[2]
	k.waitState("orders", first, client.StateDelivered)
	if out := k.ok("", "jobs", "create", "orders", "--dedup-key", "order-1042", "--dedup-window", "1d"); !strings.Contains(out, "duplicate job "+first+" in orders: delivered") {
		t.Errorf("jobs create --dedup-key again said: %s", out)
	}

	// Expiry and priority: --ttl and --priority are stored and shown;
	// --ttl with --expires-at is refused, naming both.
	k.json(&j, "jobs", "create", "orders", "--id", "later", "--delay", "5h", "--ttl", "1h", "--priority", "7")
	if j.Priority != 7 || !j.ExpiresAt.Equal(j.RunAt.Add(time.Hour)) {
		t.Errorf("jobs create --ttl 1h --priority 7: %+v", j)
	}
	if out := k.ok("", "jobs", "get", "orders", "later"); !strings.Contains(out, "priority") || !strings.Contains(out, "expires_at") {
		t.Errorf("jobs get shows no expiry or priority: %s", out)
	}
	k.fails(exitError, []string{"jobs", "create", "orders", "--ttl", "1h", "--expires-at", "2030-01-01T00:00:00Z"}, "ttl")

	// Dead letters: a receiver that answers 410 Gone kills its jobs at once.
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	k.ok("", "topics", "put", "gone", "--callback-url", gone.URL)
	k.ok("", "jobs", "create", "gone", "--id", "g1")
	k.waitState("gone", "g1", client.StateDead)
	var dead client.JobList
	k.json(&dead, "dead", "list")
	if len(dead.Jobs) != 1 || dead.Jobs[0].ID != "g1" || dead.Jobs[0].Topic != "gone" {
		t.Errorf("dead list --json: %+v", dead)
	}
	for kind, n := range map[string]int{"job": 1, "notification": 0} {
		dead = client.JobList{}
		k.json(&dead, "dead", "list", "--kind", kind)
		if len(dead.Jobs) != n || (n == 1 && dead.Jobs[0].Kind != client.KindJob) {
			t.Errorf("dead list --kind %s --json: %+v", kind, dead)
		}
	}
	k.fails(exitUsage, []string{"dead", "list", "--kind", "notice"}, "--kind")
	k.fails(exitUsage, []string{"jobs", "list", "orders", "--kind", "jobs"}, "--kind")
	k.json(&dead, "dead", "list", "--topic", "orders")
	if len(dead.Jobs) != 0 {
		t.Errorf("dead list --topic orders --json: %+v", dead)
	}
	if out := k.ok("", "dead", "list"); !strings.Contains(out, "gone") || !strings.Contains(out, "410") {
		t.Errorf("dead list:\n%s", out)
	}
	k.fails(exitError, []string{"jobs", "retry", "orders", "j1"}, "Conflict (409)", "not dead")
	k.fails(exitError, []string{"topics", "delete", "gone"}, "Conflict (409)")
	k.json(&j, "dead", "replay", "gone", "g1")
	// attempt numbers go on after a replay; the log shows it
	if j.State == client.StateDead || j.Attempts != 1 || len(j.AttemptLog) == 0 || j.AttemptLog[len(j.AttemptLog)-1].Event != "replay" {
		t.Errorf("dead replay --json: %+v", j)
	}
	k.waitState("gone", "g1", client.StateDead)
	k.json(&j, "jobs", "retry", "gone", "g1")
	if j.State == client.StateDead {
		t.Errorf("jobs retry --json: %+v", j)
	}

	var keys, rotated client.SigningKeys
	k.json(&keys, "keys", "list")
	k.json(&rotated, "keys", "rotate")
	if !strings.HasPrefix(keys.Current, "whsec_") || rotated.Current != keys.Next || rotated.Next == keys.Next {
		t.Errorf("keys list %+v, then rotate %+v", keys, rotated)
	}
	var stats client.Stats
	k.json(&stats, "stats")
	if len(stats.Topics) != 2 || stats.Topics[1].Topic != "orders" || stats.Topics[1].Counts.Delivered != 2 { // "now" and the dedup-key job
		t.Errorf("stats --json: %+v", stats)
	}
	if out := k.ok("", "stats"); !strings.Contains(out, "DELIVERED") || !strings.Contains(out, "orders") {
		t.Errorf("stats:\n%s", out)
	}

	// A schedule: its payload on stdin, shown in its zone, firing, paused,
	// triggered by hand and deleted.
	out = k.ok(`{"report": "daily"}`, "schedules", "put", "orders", "daily", "--cron", "0 9 * * MON-FRI",
		"--timezone", "Europe/Paris", "--payload-file", "-", "--catch-up", "none")
	if !strings.Contains(out, "created schedule daily in orders") || !strings.Contains(out, "0 9 * * MON-FRI (Europe/Paris)") ||
		!strings.Contains(out, " 09:00:00.000 CET") {
		t.Errorf("schedules put said:\n%s", out)
	}
	var sc client.Schedule
	k.json(&sc, "schedules", "put", "orders", "beat", "--every", "1s", "--payload", `{"beat": true}`)
	if sc.Result != client.ResultCreated || sc.Every != client.Duration(time.Second) || len(sc.NextRuns) != 5 || sc.PendingJob == "" {
		t.Errorf("schedules put --every 1s --json: %+v", sc)
	}
	testwait.UntilNil(t, 15*time.Second, func() error {
		if k.json(&sc, "schedules", "get", "orders", "beat"); sc.LastRun == nil || sc.LastRun.State != client.StateDelivered {
			return fmt.Errorf("%+v", sc)
		}
		return nil
	}, "schedule beat delivering an occurrence")
	if !strings.HasPrefix(sc.LastRun.JobID, "beat@") {
		t.Errorf("last run's job %q", sc.LastRun.JobID)
	}
	out = k.ok("", "schedules", "list", "orders")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "beat ") ||
		!strings.Contains(lines[1], "every 1s") || !strings.Contains(lines[1], "delivered") || !strings.HasPrefix(lines[2], "daily ") {
		t.Errorf("schedules list:\n%s", out)
	}
	var scs client.ScheduleList
	k.json(&scs, "schedules", "list", "orders", "--limit", "1", "--all")
	if len(scs.Schedules) != 2 {
		t.Errorf("schedules list --all --json: %+v", scs)
	}
	k.json(&sc, "schedules", "pause", "orders", "beat")
	if !sc.Paused || len(sc.NextRuns) != 0 {
		t.Errorf("schedules pause --json: %+v", sc)
	}
	k.json(&j, "schedules", "trigger", "orders", "beat")
	if !strings.HasPrefix(j.ID, "beat@") || j.Topic != "orders" {
		t.Errorf("schedules trigger --json: %+v", j)
	}
	k.waitState("orders", j.ID, client.StateDelivered)
	if out := k.ok("", "schedules", "resume", "orders", "beat"); !strings.Contains(out, "resumed schedule beat") || !strings.Contains(out, "next_run") {
		t.Errorf("schedules resume said:\n%s", out)
	}
	k.ok("", "schedules", "delete", "orders", "beat")
	k.fails(exitNotFound, []string{"schedules", "get", "orders", "beat"}, "Not Found (404)")
	k.fails(exitUsage, []string{"schedules", "put", "orders", "x"}, "--cron or --every")
	out = k.ok("", "schedules", "put", "orders", "capped", "--every", "1h", "--overlap", "skip", "--jitter", "2s", "--max-runs", "2")
	for _, want := range []string{"overlap", "skip", "jitter", "2s", "max_runs", "runs", "state", "active"} {
		if !strings.Contains(out, want) {
			t.Errorf("schedules put --overlap --jitter --max-runs: no %q in\n%s", want, out)
		}
	}
	now := time.Now().UTC()
	out = k.ok("", "schedules", "backfill", "orders", "daily", "--from", now.Add(-7*24*time.Hour).Format(time.RFC3339), "--to", now.Format(time.RFC3339))
	if !strings.Contains(out, "backfilled schedule daily in orders: 5 instants fired") {
		t.Errorf("schedules backfill said:\n%s", out)
	}
	k.fails(exitUsage, []string{"schedules", "backfill", "orders", "daily"}, "--from and --to")
	k.fails(exitError, []string{"schedules", "put", "orders", "x", "--cron", "0 25 * * *"}, "Invalid request (400)", "  cron: ")
	k.fails(exitError, []string{"schedules", "put", "orders", "x", "--every", "1h", "--timezone", "Mars/Olympus"}, "  timezone: ")

	// What a script meets when something is wrong.
	k.fails(exitError, []string{"jobs", "create", "orders", "--delay", "-1h", "--callback-url", "ftp://x"},
		"Invalid request (400)", "  delay: ", "  callback_url: ")
	k.fails(exitUsage, []string{"jobs", "create", "orders", "--delay", "soon"}, `"soon" is not a duration`, "kairos jobs create -h")
	k.fails(exitUsage, []string{"jobs", "get", "orders"}, "needs TOPIC ID")
	k.fails(exitUsage, []string{"jobs", "create", "orders", "--payload", "{oops"}, "not JSON")
	k.fails(exitUsage, []string{"jobs", "list", "orders", "--state", "lost"}, `"lost" is not a state`)
	k.fails(exitUsage, []string{"jobs", "reschedule", "orders", "j1"}, "--run-at or --delay")
	k.fails(exitUsage, []string{"jobs", "frobnicate"}, `no command "frobnicate"`)
	k.fails(exitUsage, []string{"topics", "put", "t"}, "--callback-url is required")
	bad := kairosCLI{t: t, url: ti.url, token: "not-a-token"}
	bad.fails(exitError, []string{"topics", "list"}, "Unauthorized (401)", "KAIROS_TOKEN")
	gone.Close()
	nowhere := kairosCLI{t: t, url: gone.URL, token: ti.token}
	nowhere.fails(exitNoAnswer, []string{"topics", "list"}, "no answer from "+gone.URL, "KAIROS_URL")
}

// TestCLIMasksSecrets: `topics put` and `topics get` print a topic with
// the values of its secret-looking headers (X-Jwt, X-Hmac) and its URLs'
// query values masked, as the API answers; --reveal shows them.
func TestCLIMasksSecrets(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	secrets := []string{"s3cr3t-q", "jwt-v4lue", "hmac-v4lue"}
	out := k.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL+"/hook?token=s3cr3t-q", "--header", "X-Jwt=jwt-v4lue",
		"--header", "X-Hmac=hmac-v4lue", "--header", "X-Team=billing")
	out += k.ok("", "topics", "get", "orders")
	out += k.ok("", "topics", "get", "orders", "--json")
	out += k.ok("", "topics", "list")
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the CLI printed the secret %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "X-Jwt: ••••••••") || !strings.Contains(out, "/hook?token=••••••••") || !strings.Contains(out, "X-Team: billing") {
		t.Errorf("the CLI's output lacks the masks (or the plain header):\n%s", out)
	}
	out = k.ok("", "topics", "get", "orders", "--reveal")
	for _, s := range secrets {
		if !strings.Contains(out, s) {
			t.Errorf("topics get --reveal lacks %q:\n%s", s, out)
		}
	}
}

// TestCLIServerErrorExitCode: a 5xx answer is exit code 4, like no answer.
func TestCLIServerErrorExitCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"type":"urn:kairos:problem:internal","title":"Internal Server Error","status":500,"detail":"an unexpected error occurred; it has been logged"}`))
	}))
	defer srv.Close()
	k := kairosCLI{t: t, url: srv.URL, token: "x"}
	k.fails(exitNoAnswer, []string{"keys", "list"}, "Internal Server Error (500): an unexpected error occurred")
}

// TestCLIHelp: every group and command of the API prints its usage on
// stdout with -h and --help and exits 0; an unknown flag is exit code 2
// with the mistake on stderr.
func TestCLIHelp(t *testing.T) {
	k := kairosCLI{t: t, url: "http://127.0.0.1:1"}
	for group, cmds := range apiGroups {
		lines := [][]string{{group}}
		for _, c := range cmds {
			lines = append(lines, []string{group, c.name})
		}
		if cmds == nil {
			lines = [][]string{{group}}
		}
		for _, line := range lines {
			for _, h := range []string{"-h", "--help"} {
				r := k.run("", append(line, h)...)
				if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: kairos "+strings.Join(line, " ")) || r.stderr != "" {
					t.Errorf("kairos %s %s: exit %d, stdout %q, stderr %q", strings.Join(line, " "), h, r.code, r.stdout, r.stderr)
				}
			}
			if len(line) == 1 && cmds != nil {
				continue // a group takes no flags of its own
			}
			if r := k.run("", append(line, "--no-such-flag")...); r.code != exitUsage || !strings.Contains(r.stderr, "no-such-flag") || r.stdout != "" {
				t.Errorf("kairos %s --no-such-flag: exit %d, stdout %q, stderr %q", strings.Join(line, " "), r.code, r.stdout, r.stderr)
			}
		}
	}
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

// TestCLIJobCreateNeitherMeansNow: `kairos jobs create` with neither
// --run-at nor --delay sends a body with neither (its payload and flags
// only), which kairos reads as now; durations take days.
func TestCLIJobCreateNeitherMeansNow(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"j1","topic":"orders","tenant":"acme","state":"ready","run_at":"2026-11-21T10:00:00.000Z","created_at":"2026-11-21T10:00:00.000Z","attempts":0,"result":"created"}`))
	}))
	defer srv.Close()
	fake := kairosCLI{t: t, url: srv.URL, token: "x"}
	fake.ok("", "jobs", "create", "orders", "--payload", `{"n": 1}`)
	fake.ok("", "jobs", "create", "orders")
	fake.ok("", "jobs", "create", "orders", "--delay", "1d12h", "--backoff-max", "1d", "--timeout", "90s")
	want := []string{
		`POST /v1/topics/orders/jobs application/json {"payload":{"n": 1}}`,
		`POST /v1/topics/orders/jobs application/json {}`,
		`POST /v1/topics/orders/jobs application/json {"timeout":"1m30s","backoff":{"max":"24h0m0s"},"delay":"36h0m0s"}`,
	}
	if d := cmp.Diff(want, bodies); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}

	// against kairos: now is now, and a day is 24 hours
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	k.ok("", "topics", "put", "orders", "--callback-url", ti.rcvURL)
	before := time.Now()
	var j client.Job
	k.json(&j, "jobs", "create", "orders", "--id", "now", "--payload", "1")
	if d := j.RunAt.Sub(before); d < -time.Second || d > time.Second {
		t.Errorf("neither --run-at nor --delay: run_at %s, %v from now; want now", j.RunAt, d)
	}
	k.waitState("orders", "now", client.StateDelivered)
	k.json(&j, "jobs", "create", "orders", "--id", "later", "--delay", "1d")
	if d := j.RunAt.Sub(before.Add(24 * time.Hour)); d < -time.Second || d > time.Second {
		t.Errorf("--delay 1d: run_at %s, %v from a day on", j.RunAt, d)
	}
	k.fails(exitUsage, []string{"jobs", "create", "orders", "--delay", "1 day"}, `"1 day" is not a duration`)
}

// TestClientCreateInAnUnknownTopic: a job that names no callback URL in a
// topic that is not registered is a 400 on callback_url naming PUT
// /v1/topics/{topic}, not a 404; one that names its own registers the
// topic, which then shows no callback URL and a closed breaker.
func TestClientCreateInAnUnknownTopic(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	c, err := client.New(ti.url, client.WithToken(ti.token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.CreateJob(ctx, "invoices", client.JobRequest{})
	var e *client.Error
	if client.IsNotFound(err) || client.StatusCode(err) != http.StatusBadRequest || !errors.As(err, &e) ||
		len(e.Errors) != 1 || e.Errors[0].Field != "callback_url" || !strings.Contains(e.Errors[0].Message, "PUT /v1/topics/invoices") {
		t.Fatalf("a job without callback_url in an unknown topic: %v (%+v), want a 400 on callback_url naming PUT /v1/topics/invoices", err, e)
	}
	if _, err := c.GetTopic(ctx, "invoices"); !client.IsNotFound(err) {
		t.Fatalf("the refused job registered its topic: GetTopic says %v", err)
	}
	if _, err := c.CreateJob(ctx, "invoices", client.JobRequest{CallbackURL: ti.rcvURL}); err != nil {
		t.Fatal(err)
	}
	tp, err := c.GetTopic(ctx, "invoices")
	if err != nil || tp.CallbackURL != "" || tp.Breaker == nil || tp.Breaker.State != "closed" {
		t.Fatalf("the implicit topic: %+v (%v), want no callback URL and a closed breaker", tp, err)
	}
}

// TestCLIScheduleLastRunSaysTrigger: `kairos schedules get` shows what
// fired the last run, and --every takes days.
func TestCLIScheduleLastRunSaysTrigger(t *testing.T) {
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	k := kairosCLI{t: t, url: ti.url, token: ti.token}
	k.ok("", "topics", "put", "reports", "--callback-url", ti.rcvURL)
	k.ok("", "schedules", "put", "reports", "weekly", "--every", "7d")
	k.ok("", "schedules", "trigger", "reports", "weekly")
	out := k.ok("", "schedules", "get", "reports", "weekly")
	if !strings.Contains(out, "(manual)") || !strings.Contains(out, "168h0m0s") {
		t.Errorf("schedules get after a trigger:\n%s", out)
	}
}
