package rdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/kairos-sh/kairos"
)

// SigningKeys are the callback signing secrets of a tenant, or of a topic
// that signs with its own: deliveries are signed with Current; receivers
// accept Current and Next, so a rotation that makes Next current breaks no
// receiver.
type SigningKeys struct {
	Current string
	Next    string
}

// SigningSecret returns the current secret that signs callbacks of
// tenant's topics: with topic "", the tenant's; else that topic's own
// (a topic whose Signing is kairos.SigningTopic; see Topic.OwnSecret).
func (s *Store) SigningSecret(ctx context.Context, tenant, topic string) (string, error) {
	key := s.k.signingKeys(tenant)
	if topic != "" {
		key = s.k.topicSigningKeys(tenant, topic)
	}
	k, err := s.signingKeysAt(ctx, key)
	return k.Current, err
}

// Topics returns every tenant's topics.
func (s *Store) Topics(ctx context.Context) ([]kairos.Topic, error) { return s.ListTopics(ctx, "") }

// GetSigningKeys returns a tenant's secrets, creating them on first use.
func (s *Store) GetSigningKeys(ctx context.Context, tenant string) (SigningKeys, error) {
	return s.signingKeysAt(ctx, s.k.signingKeys(tenant))
}

// GetTopicSigningKeys returns the own secrets of tenant's topic, creating
// them on first use. Whether the topic signs with them is its Signing.
func (s *Store) GetTopicSigningKeys(ctx context.Context, tenant, topic string) (SigningKeys, error) {
	return s.signingKeysAt(ctx, s.k.topicSigningKeys(tenant, topic))
}

// SetSigningKeys replaces a tenant's secrets with k: the embedded dev mode
// gives its fresh Redis the secrets it keeps across restarts.
func (s *Store) SetSigningKeys(ctx context.Context, tenant string, k SigningKeys) error {
	if k.Current == "" || k.Next == "" {
		return errors.New("set signing keys: both current and next are needed")
	}
	if err := s.c.HSet(ctx, s.k.signingKeys(tenant), "current", k.Current, "next", k.Next).Err(); err != nil {
		return fmt.Errorf("set signing keys: %w", err)
	}
	return nil
}

// RotateSigningKeys makes a tenant's Next current and draws a new Next.
func (s *Store) RotateSigningKeys(ctx context.Context, tenant string) (SigningKeys, error) {
	return s.rotateAt(ctx, s.k.signingKeys(tenant))
}

// RotateTopicSigningKeys makes the Next of tenant's topic's own secrets
// current and draws a new Next.
func (s *Store) RotateTopicSigningKeys(ctx context.Context, tenant, topic string) (SigningKeys, error) {
	return s.rotateAt(ctx, s.k.topicSigningKeys(tenant, topic))
}

// signingKeysAt reads the secrets held at key, creating them on first use.
func (s *Store) signingKeysAt(ctx context.Context, key string) (SigningKeys, error) {
	gen := s.opts.NewSecret
	if gen == nil {
		return SigningKeys{}, errors.New("signing keys: the store has no NewSecret option")
	}
	h, err := s.c.HGetAll(ctx, key).Result()
	if err != nil {
		return SigningKeys{}, fmt.Errorf("read signing keys: %w", err)
	}
	if h["current"] != "" && h["next"] != "" {
		return SigningKeys{Current: h["current"], Next: h["next"]}, nil
	}
	cur, err := gen()
	if err != nil {
		return SigningKeys{}, err
	}
	next, err := gen()
	if err != nil {
		return SigningKeys{}, err
	}
	pipe := s.c.TxPipeline()
	pipe.HSetNX(ctx, key, "current", cur)
	pipe.HSetNX(ctx, key, "next", next)
	all := pipe.HGetAll(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return SigningKeys{}, fmt.Errorf("create signing keys: %w", err)
	}
	return SigningKeys{Current: all.Val()["current"], Next: all.Val()["next"]}, nil
}

// rotateAt makes the Next held at key current and draws a new Next.
func (s *Store) rotateAt(ctx context.Context, key string) (SigningKeys, error) {
	keys, err := s.signingKeysAt(ctx, key)
	if err != nil {
		return SigningKeys{}, err
	}
	next, err := s.opts.NewSecret()
	if err != nil {
		return SigningKeys{}, err
	}
	rotated := SigningKeys{Current: keys.Next, Next: next}
	if err := s.c.HSet(ctx, key, "current", rotated.Current, "next", rotated.Next).Err(); err != nil {
		return SigningKeys{}, fmt.Errorf("rotate signing keys: %w", err)
	}
	return rotated, nil
}
