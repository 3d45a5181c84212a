package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/api"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// The examples call a real kairos API, which TestMain starts on a real
// redis-server: its URL and a token of tenant acme.
var kairosURL, kairosToken string

func TestMain(m *testing.M) { os.Exit(withServer(m)) }

// withServer runs the tests with the kairos API in this process, on the
// redis-server KAIROS_TEST_REDIS_URL names or on one of its own.
func withServer(m *testing.M) int {
	opt, err := redisOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopRedis()
	rc := redis.NewClient(opt)
	defer rc.Close()
	store := rdb.New(rc, rdb.Options{Prefix: "client-" + strconv.FormatInt(time.Now().UnixNano(), 36), NewSecret: callback.NewSecret})
	if err := store.Init(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	authn := auth.New([]byte("client-example-secret-0123456789"), nil)
	srv := httptest.NewServer(api.New(store, authn, api.Config{}))
	defer srv.Close()
	if kairosToken, err = authn.Mint("acme", false, time.Hour); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kairosURL = srv.URL
	return m.Run()
}

// redisOptions names the tests' Redis: KAIROS_TEST_REDIS_URL's, or a
// redis-server started now and stopped when the process ends.
func redisOptions() (*redis.Options, error) {
	if u := os.Getenv("KAIROS_TEST_REDIS_URL"); u != "" {
		return redis.ParseURL(u)
	}
	dir, err := os.MkdirTemp("", "kairos-client-test-")
	if err != nil {
		return nil, err
	}
	s, err := testredis.Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stopRedis = func() { s.Stop(); os.RemoveAll(dir) }
	return s.Options(), nil
}

var stopRedis = func() {}

func Example() {
	ctx := context.Background()
	c, err := client.New(kairosURL, client.WithToken(kairosToken))
	if err != nil {
		log.Fatal(err)
	}
	// Register a topic: where its callbacks go, and defaults for its jobs.
	_, created, err := c.PutTopic(ctx, "orders", client.TopicRequest{
		CallbackURL: "https://hooks.example.com/orders",
		CallbackSettings: client.CallbackSettings{
			MaxAttempts: 8,
			Backoff:     &client.Backoff{Initial: client.Duration(2 * time.Second), Max: client.Duration(30 * time.Minute)},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("topic created:", created)

	// Schedule a job in 30 minutes. With an id, creating it again replaces
	// it until it fires, so the call is safe to repeat.
	job, err := c.CreateJob(ctx, "orders", client.JobRequest{
		ID:      "cancel-order-1042",
		Delay:   client.Duration(30 * time.Minute),
		Payload: json.RawMessage(`{"order": 1042, "action": "cancel-if-unpaid"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.State, job.Result)

	// Move it, then cancel it.
	job, err = c.RescheduleJob(ctx, "orders", job.ID, client.RescheduleRequest{Delay: client.Duration(time.Hour)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("runs in about", time.Until(job.RunAt.Time).Round(time.Hour))
	if err := c.CancelJob(ctx, "orders", job.ID); err != nil {
		log.Fatal(err)
	}
	// It stays readable, cancelled, for the retention period.
	job, err = c.GetJob(ctx, "orders", job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State)
	// Output:
	// topic created: true
	// cancel-order-1042 scheduled created
	// runs in about 1h0m0s
	// cancelled
}

func ExampleError() {
	ctx := context.Background()
	c, err := client.New(kairosURL, client.WithToken(kairosToken))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.CreateJob(ctx, "reminders", client.JobRequest{
		Delay:       client.Duration(-time.Hour),
		CallbackURL: "ftp://example.com/",
	})
	var problem *client.Error
	if errors.As(err, &problem) {
		fmt.Println(problem.Status, problem.Title)
		for _, f := range problem.Errors {
			fmt.Printf("%s: %s\n", f.Field, f.Message)
		}
	}
	// Output:
	// 400 Invalid request
	// delay: -1h0m0s is out of range: allowed 0s to 1825d
	// callback_url: callback URL must be absolute and use http or https
}

func ExampleClient_CreateJobs() {
	ctx := context.Background()
	c, err := client.New(kairosURL, client.WithToken(kairosToken))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.CreateJobs(ctx, "signups", []client.JobRequest{
		{ID: "welcome-u1", Delay: client.Duration(time.Hour), CallbackURL: "https://hooks.example.com/welcome"},
		{ID: "welcome-u2", Delay: client.Duration(time.Hour), CallbackURL: "https://hooks.example.com/welcome"},
		{ID: "welcome u3", CallbackURL: "https://hooks.example.com/welcome"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created %d, failed %d\n", res.Created, res.Failed)
	for _, r := range res.Results {
		if r.Error != nil {
			fmt.Println(r.Index, r.Status, r.Error.Errors[0].Field)
		}
	}
	// Every job of the topic, page after page (newest first; sorted here).
	var ids []string
	for job, err := range c.AllJobs(ctx, "signups", client.ListOptions{Limit: 1}) {
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, job.ID)
	}
	slices.Sort(ids)
	fmt.Println(ids)
	// Output:
	// created 2, failed 1
	// 2 400 jobs[2].id
	// [welcome-u1 welcome-u2]
}
