package rdb

import (
	"context"
	"time"

	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// lockPool is redsync's go-redis pool with one change: a mutex is taken by
// lock.lua, which Redis runs while it is out of memory, where the plain SET
// NX that redsync sends would be refused and every shard left unscanned.
// Extending (PEXPIRE) and giving back (DEL) already run then.
type lockPool struct {
	s        *Store
	delegate redsyncredis.Pool
}

func newLockPool(s *Store) lockPool { return lockPool{s: s, delegate: goredis.NewPool(s.c)} }

func (p lockPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	c, err := p.delegate.Get(ctx)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return lockConn{Conn: c, s: p.s, ctx: ctx}, nil
}

type lockConn struct {
	redsyncredis.Conn
	s   *Store
	ctx context.Context // redsync's call, as the delegate keeps it
}

func (c lockConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	n, err := c.s.run(c.ctx, lockScript, []string{name}, value, expiry.Milliseconds()).Int()
	return n == 1, err
}
