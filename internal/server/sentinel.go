package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// sentinelUsage is what a Sentinel URL looks like, for error messages.
const sentinelUsage = "want redis://[user:password@]sentinel1:26379[/db]?addr=sentinel2:26379&addr=sentinel3:26379" +
	"[&sentinel_password=...], or rediss://... for TLS"

// sentinelOptions reads KAIROS_REDIS_URL when KAIROS_REDIS_SENTINEL_MASTER
// names master: the URL's host and each addr= parameter is a Sentinel.
// The rest reads as in a plain URL: the user and password, the database
// (path or db=) and the scheme (rediss://: TLS) are the Redis's, the
// master's and its replicas'. The Sentinels' own credentials, if they
// have any, are the parameters sentinel_password and sentinel_username.
// Over TLS each connection checks the certificate against the host it
// dials (the Sentinel's, or the master's address as the Sentinels give
// it), not against the URL's first host. Errors never hold the URL.
func sentinelOptions(raw, master string) (*redis.FailoverOptions, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", urlErr(err), sentinelUsage)
	}
	q := u.Query()
	for name, why := range map[string]string{
		"master_name":      "name the master with KAIROS_REDIS_SENTINEL_MASTER (--redis-sentinel-master)",
		"username":         "put the Redis's user and password before the host, redis://user:password@sentinel1:26379",
		"password":         "put the Redis's user and password before the host, redis://user:password@sentinel1:26379; the Sentinels' password is sentinel_password",
		"replica_only":     "kairos writes: it talks to the master only",
		"route_by_latency": "kairos writes: it talks to the master only",
		"route_randomly":   "kairos writes: it talks to the master only",
	} {
		if q.Has(name) {
			return nil, fmt.Errorf("parameter %s is not taken with KAIROS_REDIS_SENTINEL_MASTER: %s", name, why)
		}
	}
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	u.User, u.RawQuery = nil, q.Encode()
	if u.Host == "" {
		return nil, errors.New("no Sentinel host in the URL (" + sentinelUsage + ")")
	}
	opt, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", urlErr(err), sentinelUsage)
	}
	opt.MasterName = master
	opt.Username, opt.Password = user, pass
	opt.SentinelUsername, opt.SentinelPassword = sentinelUser, sentinelPass
	if opt.TLSConfig != nil {
		// go-redis names the URL's first host for every connection; left
		// empty, each TLS dial checks the certificate of the host it dials.
		opt.TLSConfig.ServerName = ""
	}
	return opt, nil
}

// masterConns follows which server the failover clients of a process talk
// to and, when one of them dials a new master, closes every connection
// still open to the old one, in both clients' pools. go-redis drops its
// command connections when the Sentinels announce the switch, but not its
// pub/sub ones: the wake subscription would stay on the old master, which
// keeps taking it while it is demoted and resynced, and kairos would never
// learn that the Redis it writes to changed. Closed, it resubscribes on
// the new master and says so (rdb.Wake.Resubscribed), so that every part
// looks at the new master's data afresh: the scanners claim what is due
// there now rather than sleeping on the plan they made on the old master,
// whose last writes the new one may lack.
type masterConns struct {
	log    *slog.Logger
	mu     sync.Mutex
	master string // the address of the last connection dialed
	conns  map[*masterConn]struct{}
}

func newMasterConns(log *slog.Logger) *masterConns {
	return &masterConns{log: log, conns: map[*masterConn]struct{}{}}
}

// DialHook records each new connection, by the address it reached.
func (m *masterConns) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		mc := &masterConn{Conn: c, m: m, addr: c.RemoteAddr().String()}
		m.add(mc)
		return mc, nil
	}
}

func (m *masterConns) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (m *masterConns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (m *masterConns) add(mc *masterConn) {
	m.mu.Lock()
	old := m.master
	var stale []*masterConn
	if old != mc.addr {
		for c := range m.conns {
			if c.addr != mc.addr {
				stale = append(stale, c)
				delete(m.conns, c)
			}
		}
		m.master = mc.addr
	}
	m.conns[mc] = struct{}{}
	m.mu.Unlock()
	if old != "" && old != mc.addr {
		m.log.Warn("the Redis Sentinels name a new master: closing the connections to the old one", "old_master", old, "master", mc.addr, "closed", len(stale))
	}
	for _, c := range stale {
		c.Conn.Close()
	}
}

func (m *masterConns) forget(mc *masterConn) {
	m.mu.Lock()
	delete(m.conns, mc)
	m.mu.Unlock()
}

// masterConn is a connection masterConns follows until it is closed.
type masterConn struct {
	net.Conn
	m    *masterConns
	addr string
}

func (c *masterConn) Close() error {
	c.m.forget(c)
	return c.Conn.Close()
}

// SyscallConn lets go-redis check an idle connection's socket, as it does
// for the connection this one wraps.
func (c *masterConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}
