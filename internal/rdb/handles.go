package rdb

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/kairos-sh/kairos"
)

// handleCache keeps topic handles both ways. Handles never change once
// given, so entries never expire.
type handleCache struct {
	mu     sync.RWMutex
	byName map[string]string // "tenant/topic" -> handle
	byH    map[string]string // handle -> "tenant/topic"
	// recorded are the handles whose tenant this process wrote into every
	// shard (recordTenant), so that their jobs count toward its quota.
	recorded map[string]bool
}

func (c *handleCache) hasTenant(h string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.recorded[h]
}

func (c *handleCache) tenantRecorded(h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recorded == nil {
		c.recorded = map[string]bool{}
	}
	c.recorded[h] = true
}

func (c *handleCache) name(h string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.byH[h]
	return n, ok
}

func (c *handleCache) handle(name string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h, ok := c.byName[name]
	return h, ok
}

func (c *handleCache) put(name, h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byName == nil {
		c.byName, c.byH = map[string]string{}, map[string]string{}
	}
	c.byName[name], c.byH[h] = h, name
}

// handle returns the handle of a tenant's topic, giving it one on first use
// when create is set; without create, a topic that never had one is
// kairos.ErrNotFound (it holds no jobs).
func (s *Store) handle(ctx context.Context, tenant, topic string, create bool) (string, error) {
	name := topicField(tenant, topic)
	if h, ok := s.handles.handle(name); ok && (!create || s.handles.hasTenant(h)) {
		return h, nil
	}
	var h string
	var err error
	if create {
		h, err = s.run(ctx, handleScript, []string{s.k.handles()}, name).Text()
	} else {
		h, err = s.c.HGet(ctx, s.k.handles(), handleNameMark+name).Result()
		if isNil(err) {
			return "", fmt.Errorf("topic %q: %w", topic, kairos.ErrNotFound)
		}
	}
	if err != nil {
		return "", fmt.Errorf("handle of %s: %w", name, err)
	}
	s.handles.put(name, h)
	if create {
		if err := s.recordTenant(ctx, tenant, h); err != nil {
			return "", err
		}
		s.handles.tenantRecorded(h)
		// workers pop a topic's ready lists once they know its handle: a
		// topic's first job may make one
		s.topicChanged(ctx)
	}
	return h, nil
}

// recordTenant writes handle h's tenant into every shard, where
// countFlush finds it to count the tenant's pending jobs; before any job
// of the topic is written, as the handle is resolved before that.
func (s *Store) recordTenant(ctx context.Context, tenant, h string) error {
	pipe := s.c.Pipeline()
	for sh := range s.k.shards {
		pipe.HSetNX(ctx, s.k.topicTenants(sh), h, tenant)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("record the tenant of handle %s: %w", h, err)
	}
	return nil
}

// topicOf returns the tenant and topic of handle h.
func (s *Store) topicOf(ctx context.Context, h string) (tenant, topic string, err error) {
	name, ok := s.handles.name(h)
	if !ok {
		name, err = s.c.HGet(ctx, s.k.handles(), handleMark+h).Result()
		if err != nil {
			return "", "", fmt.Errorf("topic of handle %s: %w", h, err)
		}
		s.handles.put(name, h)
	}
	tenant, topic, _ = strings.Cut(name, "/")
	return tenant, topic, nil
}

// jobKeyOf returns the key of the job stored under pool field f.
func (s *Store) jobKeyOf(ctx context.Context, f string) (kairos.JobKey, string, error) {
	h, id, ok := strings.Cut(f, "/")
	if !ok {
		return kairos.JobKey{}, "", fmt.Errorf("pool field %q: %w", f, errBadRecord)
	}
	tenant, topic, err := s.topicOf(ctx, h)
	if err != nil {
		return kairos.JobKey{}, "", err
	}
	return kairos.JobKey{Tenant: tenant, Topic: topic, ID: id}, h, nil
}

// Warm reads every topic and topic handle into this Store's caches in one
// round trip (a pipeline), so that the first job creates of a process that
// just started cost no more round trips than a warm process's: `kairos
// serve` calls it before it answers /readyz. It reads two hashes of one
// entry a topic.
func (s *Store) Warm(ctx context.Context) error {
	pipe := s.c.Pipeline()
	handles := pipe.HGetAll(ctx, s.k.handles())
	gen := s.topics.generation()
	topics := pipe.HGetAll(ctx, s.k.topics())
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("read topics and handles: %w", err)
	}
	for f, h := range handles.Val() {
		if name, ok := strings.CutPrefix(f, handleNameMark); ok {
			s.handles.put(name, h)
		}
	}
	for f, raw := range topics.Val() {
		if t, err := decodeTopic(f, raw); err == nil {
			s.topics.put(f, t, gen)
		}
	}
	return nil
}
