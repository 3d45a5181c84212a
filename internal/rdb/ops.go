package rdb

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// Bulk operations (layout.go, "Bulk operations") are stored apart from
// the shards, under the hash tag {ops}, so that one script reads and
// writes an operation, the set of running ones and its tenant's slots:
//
//	P:{ops}:o:<id>      HASH  tenant, topic, action, filter (JSON), state (queued, running, done),
//	                          matched, done, failed, cursor (where its walk stands), owner (the
//	                          process running it), created and finished (ms); it expires a
//	                          retention after it finished
//	P:{ops}:run         ZSET  running operations: id -> when their owner's lease lapses
//	P:{ops}:tr:<tenant> SET   the tenant's running operations (at most TenantRunningOps)
//	P:{ops}:tq:<tenant> ZSET  the tenant's queued operations: id -> created (ms), started oldest first
func (k keys) operation(id string) string            { return k.prefix + ":{ops}:o:" + id }
func (k keys) runningOps() string                    { return k.prefix + ":{ops}:run" }
func (k keys) tenantRunningOps(tenant string) string { return k.prefix + ":{ops}:tr:" + tenant }
func (k keys) tenantQueuedOps(tenant string) string  { return k.prefix + ":{ops}:tq:" + tenant }

// opKeys are the keys of the scripts that change operation id of tenant.
func (k keys) opKeys(tenant, id string) []string {
	return []string{k.operation(id), k.runningOps(), k.tenantRunningOps(tenant), k.tenantQueuedOps(tenant)}
}

// TenantRunningOps is how many of a tenant's bulk operations run at once;
// the others wait, queued, and start oldest first as those end, so that a
// tenant cannot start enough at once to crowd out other tenants' work.
const TenantRunningOps = 2

// The actions of a bulk operation.
const (
	ActionCancel = "cancel"
	ActionReplay = "replay"
)

// The states of a bulk operation: queued (waiting for a slot of its
// tenant's), running, done.
const (
	OpQueued  = "queued"
	OpRunning = "running"
	OpDone    = "done"
)

// BulkFilter selects a topic's jobs for a bulk operation: all its fields
// that are set must match. A filter with none set selects nothing (the
// API refuses it).
type BulkFilter struct {
	State     kairos.State      `json:"state,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	RunAtFrom time.Time         `json:"run_at_from,omitzero"` // run_at at or after it
	RunAtTo   time.Time         `json:"run_at_to,omitzero"`   // run_at before it
}

// Empty reports whether f sets no field.
func (f BulkFilter) Empty() bool {
	return f.State == "" && len(f.Labels) == 0 && f.RunAtFrom.IsZero() && f.RunAtTo.IsZero()
}

// Operation is a bulk operation: Action applied to the jobs of a topic
// that Filter selects, in batches, in the background. Matched is, while it
// runs, an estimate (the candidates its index holds, less those found not
// to match); once done, exactly Done + Failed. Failed counts jobs that
// matched but the action could not apply to when it reached them (a job
// being delivered then, for a cancel).
type Operation struct {
	ID, Tenant, Topic string
	Action            string
	Filter            BulkFilter
	State             string
	Matched           int64
	Done, Failed      int64
	CreatedAt         time.Time
	FinishedAt        time.Time
	// Owner is the process running it; LeaseUntil when its lease lapses
	// (zero once done), after which another process may take it over.
	Owner      string
	LeaseUntil time.Time
	// Cursor is where its walk stands (Store.BulkBatch).
	Cursor string
	// Room, for a replay when Limited, is how many more jobs the tenant's
	// max_pending lets the next batch replay. The runner sets both before
	// each batch; they are not stored. Jobs beyond it stay as they are
	// and count as failed.
	Limited bool  `json:"-"`
	Room    int64 `json:"-"`
}

// NewOperationID returns a fresh operation id.
func NewOperationID() string {
	var b [10]byte
	rand.Read(b[:])
	return "op_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// CreateOperation stores op, held by owner for lease, with an estimate of
// the jobs it matches; op.ID must be fresh. It is running when its tenant
// runs fewer than TenantRunningOps and has none queued, else queued. It
// returns op as stored, and the ids of the tenant's queued operations
// that a free slot let start first (held by owner too).
func (s *Store) CreateOperation(ctx context.Context, op Operation, owner string, lease time.Duration) (Operation, []string, error) {
	filter, err := json.Marshal(op.Filter)
	if err != nil {
		return Operation{}, nil, fmt.Errorf("encode filter: %w", err)
	}
	est, err := s.estimate(ctx, op)
	if err != nil {
		return Operation{}, nil, err
	}
	res, err := s.run(ctx, opnewScript, s.k.opKeys(op.Tenant, op.ID), op.ID, s.scriptNow(), lease.Milliseconds(), TenantRunningOps, owner,
		"tenant", op.Tenant, "topic", op.Topic, "action", op.Action, "filter", string(filter), "matched", est).Slice()
	if err == nil && len(res) < 2 {
		err = errShortReply
	}
	if err != nil {
		return Operation{}, nil, fmt.Errorf("create operation: %w", err)
	}
	now := fromMS(toInt(res[0]))
	op.State, op.Matched, op.Done, op.Failed, op.Owner, op.CreatedAt = fmt.Sprint(res[1]), est, 0, 0, owner, now
	if op.State == OpRunning {
		op.LeaseUntil = now.Add(lease)
	}
	return op, strs(res[2:]), nil
}

// strs is the strings of a script's reply.
func strs(vs []any) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// GetOperation reads an operation; kairos.ErrNotFound when there is none
// (or it finished more than a retention ago).
func (s *Store) GetOperation(ctx context.Context, id string) (Operation, error) {
	pipe := s.c.Pipeline()
	h := pipe.HGetAll(ctx, s.k.operation(id))
	lease := pipe.ZScore(ctx, s.k.runningOps(), id)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return Operation{}, fmt.Errorf("get operation %s: %w", id, err)
	}
	f := h.Val()
	if len(f) == 0 {
		return Operation{}, fmt.Errorf("operation %q: %w", id, kairos.ErrNotFound)
	}
	n := func(k string) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	op := Operation{ID: id, Tenant: f["tenant"], Topic: f["topic"], Action: f["action"], State: f["state"],
		Matched: n("matched"), Done: n("done"), Failed: n("failed"), CreatedAt: fromMS(n("created")),
		FinishedAt: fromMS(n("finished")), Owner: f["owner"], Cursor: f["cursor"]}
	if err := json.Unmarshal([]byte(f["filter"]), &op.Filter); err != nil {
		return Operation{}, fmt.Errorf("operation %s: decode filter: %w", id, err)
	}
	if lease.Err() == nil {
		op.LeaseUntil = fromMS(int64(lease.Val()))
	}
	op.Matched = max(op.Matched, op.Done+op.Failed) // the estimate is not below what was acted on
	return op, nil
}

// AdoptOperation makes owner the runner of operation id, for lease from
// now, when it is running and its lease lapsed or owner holds it already;
// it reports whether owner now holds it.
func (s *Store) AdoptOperation(ctx context.Context, id, owner string, lease time.Duration) (bool, error) {
	n, err := s.run(ctx, opadoptScript, []string{s.k.operation(id), s.k.runningOps()}, id, owner, s.scriptNow(), lease.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("adopt operation %s: %w", id, err)
	}
	return n == 1, nil
}

// OrphanedOperations returns up to limit running operations whose lease
// lapsed: one ZRANGEBYSCORE.
func (s *Store) OrphanedOperations(ctx context.Context, limit int) ([]string, error) {
	ids, err := s.c.ZRangeByScore(ctx, s.k.runningOps(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(ms(s.Now()), 10),
		Count: int64(limit)}).Result()
	if err != nil && !isNil(err) {
		return nil, fmt.Errorf("orphaned operations: %w", err)
	}
	return ids, nil
}

// Step is what one batch of an operation did (Store.BulkBatch).
type Step struct {
	Cursor   string // where the walk goes on
	Unmatch  int64  // candidates that did not match
	Done     int64
	Failed   int64
	Finished bool
	// Uncounted, when not nil, says why the step's deliveries were not
	// moved in their subscriptions' counts (its actions are done): the
	// caller logs it.
	Uncounted error
}

// RecordStep records step of operation id of tenant for owner and renews
// its lease; held is false when owner no longer holds it (its lease lapsed
// and another process took it): the caller stops. The step that finishes
// it frees its slot: started holds the ids of the tenant's queued
// operations that then started, held by owner.
func (s *Store) RecordStep(ctx context.Context, tenant, id, owner string, lease time.Duration, step Step) (held bool, started []string, err error) {
	fin := "0"
	if step.Finished {
		fin = "1"
	}
	res, err := s.run(ctx, opstepScript, s.k.opKeys(tenant, id), id, owner, s.scriptNow(), lease.Milliseconds(),
		step.Cursor, step.Unmatch, step.Done, step.Failed, fin, s.opts.Retention.Milliseconds(), TenantRunningOps).Slice()
	if err == nil && len(res) == 0 {
		err = errShortReply
	}
	if err != nil {
		return false, nil, fmt.Errorf("record operation %s: %w", id, err)
	}
	return toInt(res[0]) == 1, strs(res[1:]), nil
}

// errBadOpCursor is a cursor that does not parse.
var errBadOpCursor = errors.New("malformed operation cursor")

// errShortReply is a script's reply with fewer values than it promises.
var errShortReply = errors.New("short reply from the script")
