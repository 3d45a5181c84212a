package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"sort"
	"strconv"
)

// CreateJob schedules a job on topic, or, when req.ID names a job of the
// topic that has not fired, replaces and reschedules it: the answer's
// Result says which. A topic that is not registered is registered when the
// job names its own CallbackURL (with kairos's defaults and no callback URL
// of its own: its jobs that name none are refused until PutTopic gives it
// one); a job that names none in such a topic is refused with a 400 on
// callback_url, not a 404 ([IsNotFound] is false).
//
// A create with an ID or a DedupKey is retried as the policy allows (a
// DedupKey's retry within its window finds the first job even once it was
// delivered); one with neither is sent once.
func (c *Client) CreateJob(ctx context.Context, topic string, req JobRequest) (*Job, error) {
	body, err := req.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var j Job
	r := request{method: http.MethodPost, path: topicPath(topic, "jobs"), body: body, retry: req.ID != "" || req.DedupKey != ""}
	if _, err := c.do(ctx, r, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// CreateJobs schedules up to 1000 jobs on topic, each as CreateJob would,
// on its own: a bad item fails only itself, with its Error in its result.
// The error returned is the batch's as a whole (a body over the limit, a
// refused token), or, when every item failed, an [*Error] of type
// urn:kairos:problem:batch-failed returned with the BatchResult, whose
// items say why each failed; nothing was stored.
//
// A batch whose jobs all carry an ID or a DedupKey is retried as the
// policy allows; any other is sent once.
func (c *Client) CreateJobs(ctx context.Context, topic string, jobs []JobRequest) (*BatchResult, error) {
	body, err := batchBody(jobs)
	if err != nil {
		return nil, err
	}
	retry := len(jobs) > 0
	for _, j := range jobs {
		retry = retry && (j.ID != "" || j.DedupKey != "")
	}
	var res, failed BatchResult
	r := request{method: http.MethodPost, path: topicPath(topic, "jobs", "batch"), body: body, retry: retry, problemOut: &failed}
	if _, err := c.do(ctx, r, &res); err != nil {
		if len(failed.Results) > 0 {
			return &failed, err
		}
		return nil, err
	}
	return &res, nil
}

// GetJob returns a job with its state, attempts, recent attempt log and
// payload. Delivered jobs stay readable for the retention period.
func (c *Client) GetJob(ctx context.Context, topic, id string) (*Job, error) {
	var j Job
	if _, err := c.do(ctx, get(topicPath(topic, "jobs", id), c.revealQuery()), &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListJobs returns a page of the topic's jobs, newest first (dead jobs by
// the time they died), without payloads. A page filtered by state may hold
// fewer than the limit and still have a next cursor.
func (c *Client) ListJobs(ctx context.Context, topic string, opts ListOptions) (*JobList, error) {
	var page JobList
	if _, err := c.do(ctx, get(topicPath(topic, "jobs"), opts.query(true)), &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllJobs iterates over the topic's jobs from opts.Cursor on, fetching
// page after page of opts.Limit. It stops at the first error, which it
// yields.
func (c *Client) AllJobs(ctx context.Context, topic string, opts ListOptions) iter.Seq2[Job, error] {
	return pages(opts, jobPages(func(o ListOptions) (*JobList, error) { return c.ListJobs(ctx, topic, o) }))
}

// CancelJob cancels a job that has not been delivered: it stays readable
// in [StateCancelled], with its history, for the retention period (a dead
// job leaves the dead letters); its id is free again at once. A job being delivered now, or
// delivered, is a conflict ([IsConflict]). Cancelling a schedule's pending
// occurrence skips that instant only: the schedule's next becomes pending.
func (c *Client) CancelJob(ctx context.Context, topic, id string) error {
	_, err := c.do(ctx, del(topicPath(topic, "jobs", id)), nil)
	return err
}

// RescheduleJob moves a job that has not fired (scheduled, ready or
// retrying) to a new time; it keeps its attempts. Any other state is a
// conflict; replay a dead job with RetryJob. A schedule's pending occurrence moved fires once at
// its new time, outside its schedule, which goes on from its next instant.
// It is sent once.
func (c *Client) RescheduleJob(ctx context.Context, topic, id string, req RescheduleRequest) (*Job, error) {
	r, err := jsonBody(http.MethodPatch, topicPath(topic, "jobs", id), req, false)
	if err != nil {
		return nil, err
	}
	var j Job
	if _, err := c.do(ctx, r, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// RetryJob replays a dead job: a fresh set of attempts, the first now. A
// job in any other state is a conflict ([IsConflict]). It is sent once.
func (c *Client) RetryJob(ctx context.Context, topic, id string) (*Job, error) {
	var j Job
	r := request{method: http.MethodPost, path: topicPath(topic, "jobs", id, "retry")}
	if _, err := c.do(ctx, r, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListDead returns a page of the dead jobs of every topic of the tenant
// (an admin's, without [WithTenant], of every tenant), most recently dead
// first, without payloads. opts.State must be empty or StateDead; a
// topic's own dead jobs are ListJobs with StateDead.
func (c *Client) ListDead(ctx context.Context, opts ListOptions) (*JobList, error) {
	if opts.State != "" && opts.State != StateDead {
		return nil, errors.New("ListDead lists dead jobs only: leave ListOptions.State empty")
	}
	var page JobList
	if _, err := c.do(ctx, get("/v1/dead", opts.query(false)), &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllDead iterates over the dead jobs as ListDead lists them, page after
// page. It stops at the first error, which it yields.
func (c *Client) AllDead(ctx context.Context, opts ListOptions) iter.Seq2[Job, error] {
	return pages(opts, jobPages(func(o ListOptions) (*JobList, error) { return c.ListDead(ctx, o) }))
}

// query is the listing's query string; withState adds the state filter.
func (o ListOptions) query(withState bool) url.Values {
	q := url.Values{}
	if withState && o.State != "" {
		q.Set("state", string(o.State))
	}
	if o.Kind != "" {
		q.Set("kind", string(o.Kind))
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if withState {
		keys := make([]string, 0, len(o.Labels))
		for k := range o.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q.Add("label", k+":"+o.Labels[k])
		}
	}
	return q
}

// pages iterates over the items of the pages list returns, following
// their cursors from opts.Cursor on. It stops at the first error, which it
// yields.
func pages[T any](opts ListOptions, list func(ListOptions) (items []T, next string, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := list(opts)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			opts.Cursor = next
		}
	}
}

// jobPages adapts a listing of jobs to pages.
func jobPages(list func(ListOptions) (*JobList, error)) func(ListOptions) ([]Job, string, error) {
	return func(o ListOptions) ([]Job, string, error) {
		page, err := list(o)
		if err != nil {
			return nil, "", err
		}
		return page.Jobs, page.NextCursor, nil
	}
}
