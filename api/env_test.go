package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/bulk"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestMain(m *testing.M) {
	code := testredis.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// t0 is the start of every test's clock, on both the store and the token checker.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const testSecret = "test-secret-of-at-least-32-bytes!!"

// env is one API server over its own key prefix of the shared redis-server.
type env struct {
	srv    *httptest.Server
	store  *rdb.Store
	rc     *redis.Client
	prefix string
	auth   *auth.Authenticator
	clock  *testclock.Clock
}

// newEnv starts an API server on loopback with its own key prefix and clock.
func newEnv(tb testing.TB, cfg Config) *env {
	tb.Helper()
	return newEnvOn(tb, cfg, true)
}

// newEnvOn is newEnv whose bulk runner (when cfg names none) runs the
// operations it creates only when runBulk is set.
func newEnvOn(tb testing.TB, cfg Config, runBulk bool) *env {
	tb.Helper()
	e := &env{rc: testredis.Client(tb), prefix: testredis.Prefix(tb), clock: testclock.New(t0)}
	e.store = rdb.New(e.rc, rdb.Options{Prefix: e.prefix, Now: e.clock.Now, NewSecret: callback.NewSecret})
	if err := e.store.Init(context.Background()); err != nil {
		tb.Fatal(err)
	}
	e.auth = auth.New([]byte(testSecret), e.clock.Now)
	if cfg.Bulk == nil && !runBulk {
		cfg.Bulk = bulk.New(e.store, bulk.Config{})
	}
	if cfg.Bulk == nil {
		cfg.Bulk = bulk.New(e.store, bulk.Config{Pause: time.Millisecond})
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { cfg.Bulk.Run(ctx); close(done) }()
		tb.Cleanup(func() { stop(); <-done })
	}
	e.srv = httptest.NewServer(New(e.store, e.auth, cfg))
	tb.Cleanup(e.srv.Close)
	return e
}

// token returns an Authorization header value for tenant, valid for an
// hour.
func (e *env) token(tb testing.TB, tenant string, admin bool) string {
	tb.Helper()
	return e.tokenFor(tb, tenant, admin, time.Hour)
}

// tokenFor is token valid for ttl (0: it never expires).
func (e *env) tokenFor(tb testing.TB, tenant string, admin bool, ttl time.Duration) string {
	tb.Helper()
	tok, err := e.auth.Mint(tenant, admin, ttl)
	if err != nil {
		tb.Fatal(err)
	}
	return "Bearer " + tok
}

// result is a server's answer to one request, and the spec's verdict.
type result struct {
	Status int
	Header http.Header
	Body   []byte
	Spec   specCheck
}

// reqOption adjusts one request of env.do.
type reqOption func(*reqOpts)

type reqOpts struct {
	contentType *string
	specLenient bool
	offSpec     bool
}

// contentType sends ct as the Content-Type ("" sends none).
func contentType(ct string) reqOption { return func(o *reqOpts) { o.contentType = &ct } }

// specLenient allows a request the spec refuses to succeed: the server is
// more forgiving than the contract (a batch with bad items answers 207).
func specLenient() reqOption { return func(o *reqOpts) { o.specLenient = true } }

// offSpec skips the spec check, for routes the spec does not describe.
func offSpec() reqOption { return func(o *reqOpts) { o.offSpec = true } }

// do sends a request to the server and checks the exchange against
// openapi.yaml: the response must match it, and a request the spec refuses
// must not succeed. body is sent as is when it is a string or []byte and as
// JSON otherwise; authz is the Authorization header ("" for none).
func (e *env) do(tb testing.TB, method, path, authz string, body any, opts ...reqOption) result {
	tb.Helper()
	var o reqOpts
	for _, f := range opts {
		f(&o)
	}
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			tb.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	if body == nil {
		req.Body = nil
	}
	switch {
	case o.contentType != nil && *o.contentType != "":
		req.Header.Set("Content-Type", *o.contentType)
	case o.contentType == nil && body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	res := result{Status: resp.StatusCode, Header: resp.Header, Body: rb}
	if o.offSpec {
		return res
	}
	res.Spec = validateExchange(tb, req, raw, resp.StatusCode, resp.Header, rb)
	if res.Spec.RequestErr != nil && res.Status < 300 && !o.specLenient {
		tb.Errorf("%s %s: the server answered %d to a request openapi.yaml refuses: %v", method, path, res.Status, res.Spec.RequestErr)
	}
	return res
}

func nopBody(b []byte) io.ReadCloser {
	if b == nil {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(b))
}

// want checks the status and decodes the body into a T.
func want[T any](tb testing.TB, res result, status int) T {
	tb.Helper()
	var v T
	if res.Status != status {
		tb.Fatalf("status %d, want %d: %s", res.Status, status, truncate(res.Body))
	}
	if err := json.Unmarshal(res.Body, &v); err != nil {
		tb.Fatalf("decode %T: %v: %s", v, err, truncate(res.Body))
	}
	return v
}

// wantProblem checks a problem+json answer of the given status.
func wantProblem(tb testing.TB, res result, status int) Problem {
	tb.Helper()
	p := want[Problem](tb, res, status)
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	if p.Status != status {
		tb.Errorf("problem status %d, want %d", p.Status, status)
	}
	return p
}

// fields returns the sorted field names of a problem.
func fields(p Problem) []string {
	out := make([]string, len(p.Errors))
	for i, f := range p.Errors {
		out[i] = f.Field
	}
	sort.Strings(out)
	return out
}

// wantFields checks that a problem names exactly these fields.
func wantFields(tb testing.TB, p Problem, want ...string) {
	tb.Helper()
	sort.Strings(want)
	if d := cmp.Diff(want, fields(p)); d != "" {
		tb.Errorf("fields (-want +got):\n%s\nproblem: %+v", d, p)
	}
}

// refused checks the answer to a bad request: a problem of that status,
// naming exactly fields when they are given, refused by openapi.yaml too
// when spec is set, and Redis as it was at before. It returns the problem.
func (e *env) refused(tb testing.TB, res result, before map[string]string, status int, fields []string, spec bool) Problem {
	tb.Helper()
	p := wantProblem(tb, res, status)
	if fields != nil {
		wantFields(tb, p, fields...)
	}
	if spec && res.Spec.RequestErr == nil {
		tb.Errorf("openapi.yaml accepts this request; it should refuse it too")
	}
	e.unchanged(tb, before)
	return p
}

// snapshot is every key under the env's prefix with its DUMPed value.
func (e *env) snapshot(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for _, k := range testredis.Keys(tb, e.rc, e.prefix) {
		v, err := e.rc.Dump(context.Background(), k).Result()
		if err != nil && err != redis.Nil {
			tb.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// unchanged checks that Redis holds what it held at before.
func (e *env) unchanged(tb testing.TB, before map[string]string) {
	tb.Helper()
	after := e.snapshot(tb)
	if d := cmp.Diff(keysOf(before), keysOf(after)); d != "" {
		tb.Errorf("keys changed (-before +after):\n%s", d)
		return
	}
	for k, v := range before {
		if after[k] != v {
			tb.Errorf("value of %s changed", k)
		}
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// putTopic registers a topic for tenant and fails the test otherwise.
func (e *env) putTopic(tb testing.TB, authz, name string, body any) topicResponse {
	tb.Helper()
	res := e.do(tb, "PUT", "/v1/topics/"+name, authz, body)
	if res.Status != http.StatusCreated && res.Status != http.StatusOK {
		tb.Fatalf("PUT topic %s: %d %s", name, res.Status, res.Body)
	}
	return want[topicResponse](tb, res, res.Status)
}

// createJob schedules a job and fails the test unless it is created.
func (e *env) createJob(tb testing.TB, authz, topic string, body any) jobResponse {
	tb.Helper()
	return want[jobResponse](tb, e.do(tb, "POST", "/v1/topics/"+topic+"/jobs", authz, body), http.StatusCreated)
}

// getJob reads a job and fails the test unless it exists.
func (e *env) getJob(tb testing.TB, authz, topic, id string) jobResponse {
	tb.Helper()
	return want[jobResponse](tb, e.do(tb, "GET", "/v1/topics/"+topic+"/jobs/"+id, authz, nil), http.StatusOK)
}

// ms formats t as the API does.
func ms(t time.Time) string { return formatTime(t) }

// obj is a JSON object literal for request bodies.
type obj = map[string]any

// hook is a callback URL for tests; nothing is ever called.
const hook = "https://hooks.example.com/kairos"

// next claims and starts a topic's due job id (its earliest due one when id
// is ""), as a scanner does; the other jobs claimed on the way are given back.
func (e *env) next(tb testing.TB, tenant, topic, id string) kairos.Job {
	tb.Helper()
	ctx := context.Background()
	var all []kairos.Claimed
	for sh := range e.store.Shards() {
		c, err := e.store.ClaimDue(ctx, sh, 500, 0, time.Second)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, c.Jobs...)
	}
	pick := -1
	for i, c := range all {
		if c.Job.Tenant == tenant && c.Job.Topic == topic && (id == "" || c.Job.ID == id) && (pick < 0 || c.Due.Before(all[pick].Due)) {
			pick = i
		}
	}
	if pick < 0 {
		tb.Fatalf("next job of %s/%s: none due", tenant, topic)
	}
	j := all[pick].Job
	if err := e.store.Release(ctx, append(all[:pick:pick], all[pick+1:]...)); err != nil {
		tb.Fatal(err)
	}
	return j
}

// deadJob drives a due job through one failed last attempt, so that it dies.
func (e *env) deadJob(tb testing.TB, tenant, topic, id string) {
	tb.Helper()
	e.finishNext(tb, tenant, topic, id, kairos.Attempt{Duration: 1500 * time.Microsecond, Status: 500, Response: "boom"}, kairos.StateDead)
}

// deliveredJob drives a due job through one successful attempt.
func (e *env) deliveredJob(tb testing.TB, tenant, topic, id string) {
	tb.Helper()
	e.finishNext(tb, tenant, topic, id, kairos.Attempt{Duration: 2 * time.Millisecond, Status: 204}, kairos.StateDelivered)
}

// finishNext takes the next due job, which must be id, and records a as
// its first attempt, ending in state want (delivered or dead).
func (e *env) finishNext(tb testing.TB, tenant, topic, id string, a kairos.Attempt, want kairos.State) {
	tb.Helper()
	j := e.next(tb, tenant, topic, id)
	if j.ID != id {
		tb.Fatalf("popped %s, want %s", j.ID, id)
	}
	a.N, a.At = 1, e.clock.Now()
	st, err := e.store.Finish(context.Background(), j.JobKey, a, outcomeFor(want), time.Time{})
	if err != nil || st != want {
		tb.Fatalf("finish: state %q err %v", st, err)
	}
}

// outcomeFor is the outcome that moves a job to state st.
func outcomeFor(st kairos.State) kairos.Outcome {
	switch st {
	case kairos.StateDelivered:
		return kairos.OutcomeDelivered
	case kairos.StateDead:
		return kairos.OutcomeDead
	}
	return kairos.OutcomeRetrying
}
