package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/kairos-sh/kairos/api"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/scanner"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test here runs kairos engines, processes, clusters or the
		// clients' suites (node, python): none is in the quick tier. make
		// test, which CI runs, passes no -short.
		fmt.Println("e2e: process-level tests, skipped under -short; make test runs them")
		os.Exit(0)
	}
	code := testredis.Main(m)
	stopCluster()
	removeInstalls()
	os.Exit(code)
}

// starter starts an engine; tests run with a single Redis and a cluster.
type starter func(*testing.T, engineOpts) *engine

const secret = "e2e-test-secret-0123456789"

// engine is kairos in process: API, scanner and worker on one store.
type engine struct {
	t      *testing.T
	store  *rdb.Store
	api    *httptest.Server
	c      *client.Client // of api, acting for tenant acme
	prefix string
}

type engineOpts struct {
	allowPrivate bool
	leaseGrace   time.Duration
	client       redis.UniversalClient // default: the package's redis-server
	blocking     redis.UniversalClient // for BRPOP; default: a client of its own
	waitReplicas int
	clockSkew    time.Duration
	tracer       trace.TracerProvider // default: none
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

func startEngine(t *testing.T, o engineOpts) *engine {
	t.Helper()
	rc := o.client
	if rc == nil {
		rc = testredis.Client(t)
	}
	if o.blocking == nil {
		o.blocking = testredis.Client(t)
	}
	prefix := testredis.Prefix(t)
	store := rdb.New(rc, rdb.Options{Prefix: prefix, LeaseGrace: o.leaseGrace, Blocking: o.blocking,
		NewSecret: callback.NewSecret, WaitReplicas: o.waitReplicas, ClockSkew: o.clockSkew})
	ctx, cancel := context.WithCancel(context.Background())
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	log := testLogger(t)
	sc := scanner.New(store, scanner.Config{LockTTL: 2 * time.Second, Logger: log, Tracer: o.tracer})
	w := callback.NewWorker(store, callback.WorkerConfig{AllowPrivate: o.allowPrivate, Wait: time.Second, TopicPoll: 200 * time.Millisecond, Grace: 5 * time.Second,
		Logger: log, Tracer: o.tracer})
	authn := auth.New([]byte(secret), nil)
	srv := httptest.NewServer(api.New(store, authn, api.Config{AllowPrivate: o.allowPrivate, Logger: log, OnTopicChange: w.Refresh, Tracer: o.tracer}))
	var wg sync.WaitGroup
	wg.Go(func() { sc.Run(ctx) })
	wg.Go(func() { w.Run(ctx) })
	tok, err := authn.Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	c, err := client.New(srv.URL, client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	return &engine{t: t, store: store, api: srv, c: c, prefix: prefix}
}

// putTopic registers topic with its callbacks going to url.
func (e *engine) putTopic(topic, url string) {
	e.t.Helper()
	e.putTopicWith(topic, client.TopicRequest{CallbackURL: url})
}

// putTopicWith registers topic with the settings of req.
func (e *engine) putTopicWith(topic string, req client.TopicRequest) {
	e.t.Helper()
	if _, _, err := e.c.PutTopic(context.Background(), topic, req); err != nil {
		e.t.Fatalf("put topic %s: %v", topic, err)
	}
}

// create creates a job on topic, failing the test if the API refuses it.
func (e *engine) create(topic string, req client.JobRequest) *client.Job {
	e.t.Helper()
	j, err := e.c.CreateJob(context.Background(), topic, req)
	if err != nil {
		e.t.Fatalf("create job %q on %s: %v", req.ID, topic, err)
	}
	return j
}

// createBatch creates jobs on topic in one call; every one must be created.
func (e *engine) createBatch(topic string, jobs []client.JobRequest) {
	e.t.Helper()
	res, err := e.c.CreateJobs(context.Background(), topic, jobs)
	if err != nil {
		e.t.Fatalf("create %d jobs on %s: %v", len(jobs), topic, err)
	}
	if res.Created != len(jobs) {
		e.t.Fatalf("batch on %s: created %d of %d: %+v", topic, res.Created, len(jobs), res.Results)
	}
}

// attemptLogGap is the time between the first two recorded attempts.
func attemptLogGap(j *client.Job) time.Duration {
	if len(j.AttemptLog) < 2 {
		return 0
	}
	return j.AttemptLog[1].At.Sub(j.AttemptLog[0].At.Time)
}

func (e *engine) job(topic, id string) *client.Job {
	e.t.Helper()
	j, err := e.c.GetJob(context.Background(), topic, id)
	if err != nil {
		e.t.Fatalf("get job %s/%s: %v", topic, id, err)
	}
	return j
}

// waitState polls a job until it reaches state, within a generous deadline.
func (e *engine) waitState(topic, id string, state client.State, within time.Duration) *client.Job {
	e.t.Helper()
	var v *client.Job
	testwait.UntilNil(e.t, within, func() error {
		if v = e.job(topic, id); v.State != state {
			return fmt.Errorf("state %s, want %s (%+v)", v.State, state, v)
		}
		return nil
	}, "job "+id)
	return v
}

// hit is one request a receiver got.
type hit struct {
	At     time.Time
	Header http.Header
	Body   []byte
	URL    string
}

// receiver is a loopback callback target whose answer the test sets.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []hit
	status func(n int, h hit) int // n is 1-based across all hits
}

func newReceiver(t *testing.T, status func(n int, h hit) int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	if r.status == nil {
		r.status = func(int, hit) int { return http.StatusOK }
	}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		h := hit{At: time.Now(), Header: req.Header.Clone(), Body: body, URL: req.URL.String()}
		r.mu.Lock()
		r.hits = append(r.hits, h)
		n := len(r.hits)
		r.mu.Unlock()
		code := r.status(n, h)
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(code)
		io.WriteString(w, "answer "+http.StatusText(code))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) all() []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hit(nil), r.hits...)
}

// byJob groups the hits by Kairos-Job-Id.
func (r *receiver) byJob() map[string][]hit {
	out := map[string][]hit{}
	for _, h := range r.all() {
		id := h.Header.Get("Kairos-Job-Id")
		out[id] = append(out[id], h)
	}
	return out
}

// waitHits waits until the receiver has at least n hits.
func (r *receiver) waitHits(t *testing.T, n int, within time.Duration) []hit {
	t.Helper()
	var h []hit
	testwait.UntilNil(t, within, func() error {
		if h = r.all(); len(h) < n {
			return fmt.Errorf("%d requests, want %d", len(h), n)
		}
		return nil
	}, "the receiver's requests")
	return h
}

func rfc3339ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// waitSettled waits until no attempt is under way in any of s's shards
// (none claimed and not finished) and none is due within a second: from
// then on no job that is not filed anew can reach a receiver, so a test
// that counts deliveries after it has seen every duplicate there could be,
// without sleeping for it.
func waitSettled(t *testing.T, s *rdb.Store) {
	t.Helper()
	testwait.UntilNil(t, 30*time.Second, func() error {
		for sh := range s.Shards() {
			p, err := s.Claim(context.Background(), sh, 0, 0, time.Second)
			if err != nil {
				return err
			}
			if p.Active > 0 {
				return fmt.Errorf("shard %d: %d attempts under way", sh, p.Active)
			}
			if !p.Next.IsZero() && p.Next.Before(p.Now.Add(time.Second)) {
				return fmt.Errorf("shard %d: work due at %v", sh, p.Next)
			}
		}
		return nil
	}, "no attempt under way")
}
