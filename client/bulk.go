package client

import (
	"context"
	"net/http"
	"net/url"
)

// BulkFilter selects a topic's jobs for a bulk operation: every field set
// must match, and at least one must be set. RunAtFrom and RunAtTo bound
// run_at to [RunAtFrom, RunAtTo), sent to the millisecond.
type BulkFilter struct {
	State     State             `json:"state,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	RunAtFrom Time              `json:"run_at_from,omitzero"`
	RunAtTo   Time              `json:"run_at_to,omitzero"`
}

// The actions of a bulk operation ([BulkRequest.Action]).
const (
	BulkCancel = "cancel"
	BulkReplay = "replay"
)

// BulkRequest is the body of [Client.BulkJobs].
type BulkRequest struct {
	Action string     `json:"action"` // BulkCancel or BulkReplay
	Filter BulkFilter `json:"filter"`
}

// The states of a bulk operation: queued while its tenant runs two others
// (it starts, oldest first, as they end), running, done.
const (
	OperationQueued  = "queued"
	OperationRunning = "running"
	OperationDone    = "done"
)

// Operation is a bulk operation and its progress. Matched is an estimate
// while it runs, and exactly Done + Failed once it is done. Failed counts
// jobs the action could not apply to when the operation reached them (a
// job being delivered then, for a cancel).
type Operation struct {
	// Operation repeats ID in the answer to BulkJobs only.
	Operation  string     `json:"operation,omitempty"`
	ID         string     `json:"id"`
	Topic      string     `json:"topic"`
	Action     string     `json:"action"`
	Filter     BulkFilter `json:"filter"`
	State      string     `json:"state"` // OperationQueued, OperationRunning or OperationDone
	Matched    int64      `json:"matched"`
	Done       int64      `json:"done"`
	Failed     int64      `json:"failed"`
	CreatedAt  Time       `json:"created_at"`
	FinishedAt Time       `json:"finished_at,omitzero"`
}

// BulkJobs starts a bulk cancel or replay of topic's jobs that req.Filter
// selects, and returns at once: the operation runs in the background (see
// [Client.GetOperation]). A cancel cancels each job as CancelJob does, a
// replay replays each dead one as RetryJob does. It is sent once.
func (c *Client) BulkJobs(ctx context.Context, topic string, req BulkRequest) (*Operation, error) {
	r, err := jsonBody(http.MethodPost, topicPath(topic, "jobs", "bulk"), req, false)
	if err != nil {
		return nil, err
	}
	var op Operation
	if _, err := c.do(ctx, r, &op); err != nil {
		return nil, err
	}
	return &op, nil
}

// GetOperation reads a bulk operation; another tenant's is not found
// ([IsNotFound]).
func (c *Client) GetOperation(ctx context.Context, id string) (*Operation, error) {
	var op Operation
	if _, err := c.do(ctx, get("/v1/operations/"+url.PathEscape(id), nil), &op); err != nil {
		return nil, err
	}
	return &op, nil
}
