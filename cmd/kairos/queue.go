package main

import (
	"context"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// queue fills callback.Queue with the Redis store.
type queue struct{ *rdb.Store }

var _ callback.Queue = queue{}

func (q queue) Topics(ctx context.Context) ([]kairos.Topic, error) { return q.ListTopics(ctx, "") }

func (q queue) SigningSecret(ctx context.Context, tenant string) (string, error) {
	k, err := q.GetSigningKeys(ctx, tenant, callback.NewSecret)
	return k.Current, err
}

func (q queue) Next(ctx context.Context, tenant, topic string, wait, topicTimeout time.Duration) (kairos.Job, bool, error) {
	return q.Store.Next(ctx, tenant, topic, wait, topicTimeout)
}
