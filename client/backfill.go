package client

import (
	"context"
	"net/http"
	"time"
)

// Overlap is what a schedule's instant does while its previous occurrence
// is still active or retrying.
type Overlap string

// The overlap rules.
const (
	OverlapAllow     Overlap = "allow"      // fire anyway (the default)
	OverlapSkip      Overlap = "skip"       // do not fire; counted as skipped
	OverlapBufferOne Overlap = "buffer_one" // fire once it ends; at most one waits, others are skipped
)

// BackfillSchedule fires each instant of the schedule's pattern in
// [from, to) that has not fired (at most 1000 instants in the range), as
// its occurrence "<id>@<unix ms>", and returns how many fired. An instant
// that fired already (by the pattern, a trigger or an earlier backfill,
// while its job is kept) does not fire again, so the call is retried as
// the policy allows. A completed schedule is a 409 (ErrConflict).
func (c *Client) BackfillSchedule(ctx context.Context, topic, id string, from, to time.Time) (int, error) {
	body, err := marshal(struct {
		From string `json:"from"`
		To   string `json:"to"`
	}{wireTime(from), wireTime(to)})
	if err != nil {
		return 0, err
	}
	var out struct {
		Instants int `json:"instants"`
	}
	if _, err := c.do(ctx, request{method: http.MethodPost, path: topicPath(topic, "schedules", id, "backfill"), body: body, retry: true}, &out); err != nil {
		return 0, err
	}
	return out.Instants, nil
}
