package testredis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoSentinel is returned by StartSentinels when neither redis-sentinel
// (Debian's redis-sentinel package) nor redis-server, which runs as a
// Sentinel with --sentinel, is installed.
var ErrNoSentinel = errors.New("redis-sentinel not found on PATH: run `make test`, which installs it with apt-get (or apt-get install redis-sentinel)")

// sentinelBinary is the command that runs a Sentinel: redis-sentinel, or
// else redis-server with --sentinel after its configuration file.
func sentinelBinary() (bin string, extra []string, err error) {
	if bin, err := exec.LookPath("redis-sentinel"); err == nil {
		return bin, nil, nil
	}
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin, []string{"--sentinel"}, nil
	}
	return "", nil, ErrNoSentinel
}

// MasterName is the name the Sentinels of StartSentinels give the master.
const MasterName = "mymaster"

// Sentinels is a Redis master, its replicas and three redis-sentinel
// processes watching it (quorum 2, down after 1 s, failover timeout 5 s),
// all on loopback ports.
type Sentinels struct {
	Servers   []*Server // the master first, as started; Master says which is master now
	Sentinels []*Server
}

// StartSentinels starts a master and replicas redis-servers in dir, each in
// a directory of its own, then three Sentinels, and waits until every
// Sentinel knows the replicas and the other two Sentinels: a failover can
// then be forced or happen by itself. extra is appended to every
// redis-server's arguments.
func StartSentinels(dir string, replicas int, extra ...string) (*Sentinels, error) {
	bin, binArgs, err := sentinelBinary()
	if err != nil {
		return nil, err
	}
	s := &Sentinels{}
	fail := func(err error) (*Sentinels, error) {
		s.Stop()
		return nil, err
	}
	for i := range 1 + replicas {
		ndir := filepath.Join(dir, "redis"+strconv.Itoa(i))
		if err := mkdir(ndir); err != nil {
			return fail(err)
		}
		// Replicas answer the master's pings within a second, so that
		// the Sentinels see them as fit for promotion soon after start.
		args := append([]string{"--repl-ping-replica-period", "1"}, extra...)
		if i > 0 {
			host, port, _ := strings.Cut(s.Servers[0].Addr, ":")
			args = append(args, "--replicaof", host, port)
		}
		srv, err := Start(ndir, args...)
		if err != nil {
			return fail(err)
		}
		s.Servers = append(s.Servers, srv)
	}
	for i := range 3 {
		ndir := filepath.Join(dir, "sentinel"+strconv.Itoa(i))
		if err := mkdir(ndir); err != nil {
			return fail(err)
		}
		srv, err := startSentinel(bin, binArgs, ndir, s.Servers[0].Addr)
		if err != nil {
			return fail(err)
		}
		s.Sentinels = append(s.Sentinels, srv)
	}
	if err := s.waitKnown(replicas, 30*time.Second); err != nil {
		return fail(err)
	}
	return s, nil
}

// startSentinel starts redis-sentinel on a free port with a configuration
// file of its own (Sentinel rewrites it) that monitors master.
func startSentinel(bin string, binArgs []string, dir, master string) (*Server, error) {
	host, port, _ := strings.Cut(master, ":")
	var lastErr error
	for range 5 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ps := strconv.Itoa(p)
		conf := filepath.Join(dir, "sentinel-"+ps+".conf")
		// down after 2 s without an answer: at 1 s, a master just
		// promoted and syncing its replicas on a loaded machine was taken
		// for down and failed over again, and the Sentinels disagreed
		// about the master for seconds after
		text := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nlogfile %s\nloglevel notice\n"+
			"sentinel monitor %s %s %s 2\nsentinel down-after-milliseconds %[4]s 2000\nsentinel failover-timeout %[4]s 5000\n",
			ps, dir, filepath.Join(dir, "redis-"+ps+".log"), MasterName, host, port)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + ps, Dir: dir, bin: bin, args: append([]string{conf}, binArgs...)}
		if lastErr = s.start(bin); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// NewSentinels is StartSentinels in a temporary directory of the test's,
// stopped at cleanup. A missing redis-sentinel skips the test, except in
// CI (CI=true), where it fails it.
func NewSentinels(tb testing.TB, replicas int, extra ...string) *Sentinels {
	tb.Helper()
	s, err := StartSentinels(tb.TempDir(), replicas, extra...)
	if errors.Is(err, ErrNoSentinel) && os.Getenv("CI") != "true" {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// URL is the Sentinels' URL, as KAIROS_REDIS_URL gives it with
// KAIROS_REDIS_SENTINEL_MASTER=MasterName.
func (s *Sentinels) URL() string {
	u := "redis://" + s.Sentinels[0].Addr
	for i, sn := range s.Sentinels[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + sn.Addr
	}
	return u
}

// client is a client of Sentinel i.
func (s *Sentinels) client(i int) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[i].Addr, MaxRetries: -1})
}

// MasterAddr is the master's address as the first Sentinel that answers
// gives it.
func (s *Sentinels) MasterAddr(ctx context.Context) (string, error) {
	var lastErr error
	for i := range s.Sentinels {
		c := s.client(i)
		addr, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		c.Close()
		if err == nil {
			return addr[0] + ":" + addr[1], nil
		}
		lastErr = err
	}
	return "", lastErr
}

// Master is the server the Sentinels name master now.
func (s *Sentinels) Master(ctx context.Context) (*Server, error) {
	addr, err := s.MasterAddr(ctx)
	if err != nil {
		return nil, err
	}
	for _, srv := range s.Servers {
		if srv.Addr == addr {
			return srv, nil
		}
	}
	return nil, fmt.Errorf("the Sentinels name %s master, a server not started here", addr)
}

// Failover forces a failover (SENTINEL FAILOVER), as an operator does
// before taking the master down.
func (s *Sentinels) Failover(ctx context.Context) error {
	c := s.client(0)
	defer c.Close()
	return c.Failover(ctx, MasterName).Err()
}

// WaitMaster waits until every Sentinel names a master other than old
// and that server says it is a master, and returns it.
func (s *Sentinels) WaitMaster(ctx context.Context, old string, within time.Duration) (*Server, error) {
	deadline := time.Now().Add(within)
	for {
		addr, err := s.agreedMaster(ctx)
		if err == nil && addr != old {
			for _, srv := range s.Servers {
				if srv.Addr == addr && role(ctx, srv) == "master" {
					return srv, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no new master within %v (last: %q, %v)", within, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// agreedMaster is the master every Sentinel still running names.
func (s *Sentinels) agreedMaster(ctx context.Context) (string, error) {
	var agreed string
	for i, sn := range s.Sentinels {
		if !sn.Alive() {
			continue
		}
		c := s.client(i)
		a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		c.Close()
		if err != nil {
			return "", err
		}
		addr := a[0] + ":" + a[1]
		if agreed != "" && addr != agreed {
			return "", fmt.Errorf("sentinels disagree: %s and %s", agreed, addr)
		}
		agreed = addr
	}
	return agreed, nil
}

// role is what ROLE says a server is: master, slave, or "" when it does
// not answer.
func role(ctx context.Context, srv *Server) string {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	r, _ := v[0].(string)
	return r
}

// waitKnown waits until every Sentinel knows the master's replicas, up
// and linked to it, and the two other Sentinels.
func (s *Sentinels) waitKnown(replicas int, within time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	var why string
	for time.Now().Before(deadline) {
		why = ""
		for i := range s.Sentinels {
			c := s.client(i)
			reps, err := c.Replicas(ctx, MasterName).Result()
			sents, err2 := c.Sentinels(ctx, MasterName).Result()
			c.Close()
			if err = errors.Join(err, err2); err != nil {
				why = err.Error()
				break
			}
			up := 0
			for _, r := range reps {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" {
					up++
				}
			}
			if up < replicas || len(sents) < len(s.Sentinels)-1 {
				why = fmt.Sprintf("sentinel %d knows %d replicas up and %d other sentinels", i, up, len(sents))
				break
			}
		}
		if why == "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("sentinels not ready within %v: %s", within, why)
}

// Stop stops the Sentinels, then the servers.
func (s *Sentinels) Stop() {
	for _, sn := range s.Sentinels {
		sn.Stop()
	}
	for _, srv := range s.Servers {
		srv.Stop()
	}
}
