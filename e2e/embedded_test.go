package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestEmbeddedServeDelivers runs the README's first command as a new user
// does: `kairos serve` with no flag (on the embedded Redis and a loopback
// listener, receivers on this machine are allowed by default), without
// KAIROS_REDIS_URL (the embedded Redis)
// and without KAIROS_AUTH_SECRET (a generated one, an admin token printed).
// With that token it registers a topic and creates jobs, single and batch,
// due now and later, one with a payload long enough to be stored in pieces;
// each is delivered once and reads back as delivered. A schedule every
// second fires on the embedded Redis too (its scripts pack headers with a
// Lua stand-in for Redis's struct library).
func TestEmbeddedServeDelivers(t *testing.T) {
	t.Parallel()
	p := testproc.StartArgs(t, "embedded", nil, "KAIROS_REDIS_URL=", "KAIROS_AUTH_SECRET=",
		"KAIROS_ADDR=127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS=", "XDG_CONFIG_HOME="+t.TempDir()) // its dev secrets kept there, not in $HOME
	token := p.WaitMatch(t, regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), 20*time.Second)
	c, err := client.New(p.URL(t), client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rcv := newReceiver(t, nil)
	if _, created, err := c.PutTopic(ctx, "demo", client.TopicRequest{CallbackURL: rcv.URL}); err != nil || !created {
		t.Fatalf("put topic: created %v, %v", created, err)
	}
	long := `{"note":"` + strings.Repeat("a long payload, stored in 64-byte pieces; ", 5) + `"}`
	if _, err := c.CreateJob(ctx, "demo", client.JobRequest{ID: "single", Delay: client.Duration(500 * time.Millisecond), Payload: json.RawMessage(long)}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CreateJobs(ctx, "demo", []client.JobRequest{
		{ID: "now", Payload: json.RawMessage("1")},
		{ID: "later", Delay: client.Duration(time.Second), Payload: json.RawMessage("2")},
	})
	if err != nil || res.Created != 2 {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	if _, err := c.PutSchedule(ctx, "demo", "tick", client.ScheduleRequest{Every: client.Duration(time.Second), Payload: json.RawMessage("3")}); err != nil {
		t.Fatal(err)
	}
	rcv.waitHits(t, 6, 20*time.Second) // the three jobs and three occurrences
	if err := c.DeleteSchedule(ctx, "demo", "tick"); err != nil {
		t.Fatal(err)
	}
	// every job the receiver saw reads delivered: none is under way, so a
	// duplicate would have come
	testwait.UntilNil(t, 20*time.Second, func() error {
		for id := range rcv.byJob() {
			v, err := c.GetJob(ctx, "demo", id)
			if err != nil {
				return err
			}
			if v.State != client.StateDelivered {
				return fmt.Errorf("job %s is %s", id, v.State)
			}
		}
		return nil
	}, "every job delivered")
	jobs := rcv.byJob()
	for _, id := range []string{"single", "now", "later"} {
		if len(jobs[id]) != 1 {
			t.Fatalf("job %s delivered %d times, want once", id, len(jobs[id]))
		}
	}
	occurrences := 0
	for id, hits := range jobs {
		if strings.HasPrefix(id, "tick@") {
			if len(hits) != 1 || string(hits[0].Body) != "3" {
				t.Fatalf("occurrence %s delivered %d times (%q), want once with the schedule's payload", id, len(hits), hits[0].Body)
			}
			occurrences++
		}
	}
	if occurrences < 3 {
		t.Fatalf("%d occurrences of the schedule every second delivered, want at least 3", occurrences)
	}
	if got := string(jobs["single"][0].Body); got != long {
		t.Fatalf("long payload arrived as %q", got)
	}
}
