package rdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

func putTopic(t *testing.T, s *Store, url string) {
	t.Helper()
	if _, _, err := s.PutTopic(context.Background(), kairos.Topic{
		Tenant: "acme", Name: "orders", CallbackURL: url, Headers: map[string]string{"X-Url": url}}); err != nil {
		t.Fatal(err)
	}
}

func topicURL(t *testing.T, s *Store) string {
	t.Helper()
	tp, err := s.GetTopic(context.Background(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	return tp.CallbackURL
}

// TestTopicCache checks that a Store sees its own topic changes at once
// and another Store's within the cache's lifetime.
func TestTopicCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, clk := newStore(t, Options{})
	b := New(testredis.Client(t), Options{Prefix: a.opts.Prefix, Now: clk.Now})
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := b.GetTopic(ctx, "acme", "orders"); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("before put: %v, want ErrNotFound", err)
	}
	putTopic(t, a, "https://example.com/1")
	if got := topicURL(t, b); got != "https://example.com/1" {
		t.Fatalf("a missing topic was kept: b reads %q after a's put", got)
	}

	topicURL(t, a) // now cached in a (and b)
	putTopic(t, a, "https://example.com/2")
	if got := topicURL(t, a); got != "https://example.com/2" {
		t.Errorf("a reads %q after its own update", got)
	}
	testwait.Until(t, 10*time.Second, func() bool { return topicURL(t, b) == "https://example.com/2" }, "b seeing a's update")

	for range 2 { // each read hands out headers of its own
		tp, err := a.GetTopic(ctx, "acme", "orders")
		if err != nil {
			t.Fatal(err)
		}
		tp.Headers["X-Url"] = "changed by a caller"
	}
	if tp, _ := a.GetTopic(ctx, "acme", "orders"); tp.Headers["X-Url"] != "https://example.com/2" {
		t.Errorf("a caller's change reached the cache: headers %v", tp.Headers)
	}

	if err := a.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetTopic(ctx, "acme", "orders"); !errors.Is(err, kairos.ErrNotFound) {
		t.Errorf("after its own delete, a reads %v, want ErrNotFound", err)
	}
	if err := a.EnsureTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if got := topicURL(t, a); got != "" {
		t.Errorf("after EnsureTopic, a reads callback %q, want none", got)
	}
}
