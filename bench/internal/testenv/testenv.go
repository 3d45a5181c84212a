// Package testenv gives the load tool's tests what the product's test
// helpers give the product's, which a module of its own cannot import: a
// redis-server child process and the kairos binary built from this
// repository.
package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server child process on a free loopback port.
type Redis struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
}

// URL returns the server's redis:// URL.
func (r *Redis) URL() string { return "redis://" + r.Addr }

// NewRedis starts a redis-server of the test's own, without persistence, in
// a temporary directory, and stops it by its PID at cleanup. A missing
// redis-server fails the test: `make test` installs it.
func NewRedis(tb testing.TB) *Redis {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatal("redis-server not found on PATH: run `make test`, which installs it (or apt-get install redis-server)")
	}
	dir := tb.TempDir()
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		r := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
		r.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := r.cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		go func() { r.cmd.Wait(); close(r.done) }()
		if lastErr = r.wait(); lastErr == nil {
			tb.Cleanup(r.stop)
			return r
		}
		r.stop()
	}
	tb.Fatal(lastErr)
	return nil
}

// wait waits until the server answers PING, or has exited.
func (r *Redis) wait() error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return fmt.Errorf("redis-server on %s exited at start", r.Addr)
		default:
		}
		if c.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer within 10s", r.Addr)
}

// stop sends SIGTERM (SIGKILL after 5s) and waits for the process.
func (r *Redis) stop() {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Keys returns every key under prefix, sorted.
func Keys(tb testing.TB, c *redis.Client, prefix string) []string {
	tb.Helper()
	ctx := context.Background()
	var out []string
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// Kairos builds cmd/kairos of this repository once per test binary and
// returns the path of the binary.
var Kairos = sync.OnceValues(func() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testenv: cannot locate the repository")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..") // bench/internal/testenv -> the repository
	dir, err := os.MkdirTemp("", "kairos-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kairos")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kairos")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kairos in %s: %w\n%s", root, err, out)
	}
	return bin, nil
})
