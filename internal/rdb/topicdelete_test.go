package rdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestCreateRacingTopicDeleteNeverLandsInADeletedTopic creates a job in a
// topic while another process deletes it, many times over: either the
// create lands first and the delete is a conflict, or the delete wins and
// the create is refused as not found; never both succeed, and a refused
// create leaves no job.
func TestCreateRacingTopicDeleteNeverLandsInADeletedTopic(t *testing.T) {
	t.Parallel()
	a, clk := newStore(t, Options{})
	b := New(testredis.Client(t), Options{Prefix: a.k.prefix, Now: clk.Now})
	if err := b.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var deleted, conflicts int
	for i := range 150 {
		topic := fmt.Sprintf("t%d", i)
		if _, _, err := a.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: topic, CallbackURL: "https://x.example/"}); err != nil {
			t.Fatal(err)
		}
		key := kairos.JobKey{Tenant: "acme", Topic: topic, ID: "j"}
		var createErr, deleteErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, createErr = b.Enqueue(ctx, kairos.Job{JobKey: key, RunAt: clk.Now().Add(time.Hour)})
		})
		wg.Go(func() { deleteErr = a.DeleteTopic(ctx, "acme", topic) })
		wg.Wait()
		_, getErr := a.GetJob(ctx, key)
		_, topicErr := a.loadTopic(ctx, "acme", topic)
		switch {
		case deleteErr == nil && createErr == nil:
			t.Fatalf("%s: the delete and the create both succeeded", topic)
		case deleteErr == nil:
			deleted++
			if !errors.Is(createErr, kairos.ErrNotFound) || !errors.Is(getErr, kairos.ErrNotFound) || !errors.Is(topicErr, kairos.ErrNotFound) {
				t.Fatalf("%s deleted: create %v, job %v, topic %v", topic, createErr, getErr, topicErr)
			}
		case errors.Is(deleteErr, kairos.ErrConflict):
			conflicts++
			if createErr != nil || getErr != nil || topicErr != nil {
				t.Fatalf("%s kept: create %v, job %v, topic %v", topic, createErr, getErr, topicErr)
			}
		default:
			t.Fatalf("%s: delete %v", topic, deleteErr)
		}
	}
	t.Logf("of 150 races, %d deletes won, %d creates won", deleted, conflicts)
}

// TestDeletedTopicRegisteredAgain: a deleted topic refuses jobs and
// schedules, and takes them again once registered anew.
func TestDeletedTopicRegisteredAgain(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	put := func() {
		t.Helper()
		if _, _, err := s.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "orders", CallbackURL: "https://x.example/"}); err != nil {
			t.Fatal(err)
		}
	}
	put()
	enqueue(t, s, "a", clk.Now().Add(time.Hour))
	if err := s.DeleteTopic(ctx, "acme", "orders"); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("delete of a topic with a job: %v", err)
	}
	if err := s.Cancel(ctx, key("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Enqueue(ctx, kairos.Job{JobKey: key("b"), RunAt: clk.Now().Add(time.Hour)})
	if !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("create in a deleted topic: %v", err)
	}
	put()
	enqueue(t, s, "b", clk.Now().Add(time.Hour))
	// EnsureTopic, as a create naming its own callback URL does, registers it again too.
	if err := s.Cancel(ctx, key("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopic(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, "c", clk.Now().Add(time.Hour))
}
