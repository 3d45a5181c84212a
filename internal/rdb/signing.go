package rdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/kairos-sh/kairos"
)

// SigningKeys are a tenant's callback signing secrets: deliveries are signed
// with Current; receivers accept Current and Next, so a rotation that makes
// Next current breaks no receiver.
type SigningKeys struct {
	Current string
	Next    string
}

// SigningSecret returns the tenant's current signing secret.
func (s *Store) SigningSecret(ctx context.Context, tenant string) (string, error) {
	k, err := s.GetSigningKeys(ctx, tenant)
	return k.Current, err
}

// Topics returns every tenant's topics.
func (s *Store) Topics(ctx context.Context) ([]kairos.Topic, error) { return s.ListTopics(ctx, "") }

// GetSigningKeys returns a tenant's secrets, creating them on first use.
func (s *Store) GetSigningKeys(ctx context.Context, tenant string) (SigningKeys, error) {
	gen := s.opts.NewSecret
	if gen == nil {
		return SigningKeys{}, errors.New("signing keys: the store has no NewSecret option")
	}
	key := s.k.signingKeys(tenant)
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

// RotateSigningKeys makes Next current and draws a new Next.
func (s *Store) RotateSigningKeys(ctx context.Context, tenant string) (SigningKeys, error) {
	keys, err := s.GetSigningKeys(ctx, tenant)
	if err != nil {
		return SigningKeys{}, err
	}
	next, err := s.opts.NewSecret()
	if err != nil {
		return SigningKeys{}, err
	}
	rotated := SigningKeys{Current: keys.Next, Next: next}
	key := s.k.signingKeys(tenant)
	if err := s.c.HSet(ctx, key, "current", rotated.Current, "next", rotated.Next).Err(); err != nil {
		return SigningKeys{}, fmt.Errorf("rotate signing keys: %w", err)
	}
	return rotated, nil
}
