package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// newClient returns a client of the kairos API acting as the token's
// tenant. It keeps a connection per concurrent caller open, and does not
// retry: a failed call is a finding, and a retry would hide it in the
// latency figures.
func newClient(base, token string, conns int) (*client.Client, *http.Client, error) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	c, err := client.New(base, client.WithToken(token), client.WithHTTPClient(hc), client.WithUserAgent("kairos-bench"),
		client.WithRetryPolicy(client.RetryPolicy{Attempts: 1}))
	return c, hc, err
}

// putTopic registers the bench's topic: its callbacks go to the receiver.
func (b *Bench) putTopic(ctx context.Context, callbackURL string) error {
	req := client.TopicRequest{CallbackURL: callbackURL}
	if b.cfg.TopicRate > 0 {
		req.Rate = &client.Rate{Limit: b.cfg.TopicRate, Period: client.Duration(time.Second)}
	}
	return b.putTopicWith(ctx, req)
}

// putTopicWith registers the bench's topic with req's flow control.
func (b *Bench) putTopicWith(ctx context.Context, req client.TopicRequest) error {
	req.Concurrency, req.Timeout, req.MaxAttempts = b.cfg.Concurrency, client.Duration(10*time.Second), 3
	_, _, err := b.api.PutTopic(ctx, b.topic, req)
	return err
}

// deleteTopic deletes the bench's topic; one that is gone is fine.
func (b *Bench) deleteTopic(ctx context.Context) error {
	if err := b.api.DeleteTopic(ctx, b.topic); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

// create sends one create call: a single create of jobs[0], or a batch of
// jobs when batch is set. Every job must be created.
func (b *Bench) create(ctx context.Context, jobs []client.JobRequest, batch bool) error {
	if !batch {
		_, err := b.api.CreateJob(ctx, b.topic, jobs[0])
		return err
	}
	res, err := b.api.CreateJobs(ctx, b.topic, jobs)
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		for _, it := range res.Results {
			if it.Error != nil {
				return fmt.Errorf("batch create: %d of %d jobs failed; jobs[%d]: %w", res.Failed, len(jobs), it.Index, it.Error)
			}
		}
		return fmt.Errorf("batch create: %d of %d jobs failed", res.Failed, len(jobs))
	}
	return nil
}

// cancel cancels a job; one that is gone or already delivered is fine.
func (b *Bench) cancel(ctx context.Context, id string) error {
	err := b.api.CancelJob(ctx, b.topic, id)
	if err != nil && !client.IsNotFound(err) && !client.IsConflict(err) {
		return err
	}
	return nil
}
