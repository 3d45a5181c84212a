// Package testredis starts real redis-server processes for tests, on free
// loopback ports, and stops them by PID.
package testredis

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server child process.
type Server struct {
	Addr   string // 127.0.0.1:port
	Dir    string
	CAFile string // for a TLS server (StartTLS): the PEM file of the CA that signed its certificate
	tls    *tls.Config
	args   []string
	bin    string // what runs it; empty: redis-server (Binary)
	cmd    *exec.Cmd
	done   chan struct{}
}

// URL returns the server's redis:// URL, or rediss:// for a TLS server.
func (s *Server) URL() string {
	if s.tls != nil {
		return "rediss://" + s.Addr
	}
	return "redis://" + s.Addr
}

// Options returns client options for the server (trusting its CA when it
// speaks TLS).
func (s *Server) Options() *redis.Options {
	return &redis.Options{Addr: s.Addr, TLSConfig: s.tls.Clone()}
}

// Binary finds redis-server. A missing binary is an error, never a skip:
// `make test` installs it.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found on PATH: run `make test`, which installs it with apt-get (or apt-get install redis-server)")
	}
	return p, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs a fresh redis-server in dir with extra arguments appended to
// the defaults (no persistence unless extra asks for it).
func Start(dir string, extra ...string) (*Server, error) {
	return startOn(dir, nil, func(port string) []string { return append([]string{"--port", port}, extra...) })
}

// startOn starts a redis-server on a free loopback port, with the port
// arguments listen returns for it; tlsCfg is how clients reach it over TLS
// (nil: plain TCP).
func startOn(dir string, tlsCfg *tls.Config, listen func(port string) []string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p := strconv.Itoa(port)
		s := &Server{Addr: "127.0.0.1:" + p, Dir: dir, tls: tlsCfg}
		s.args = append([]string{"--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
			"--logfile", filepath.Join(dir, "redis-"+p+".log")}, listen(p)...)
		if lastErr = s.start(bin); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *Server) start(bin string) error {
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// What redis-server prints before its log file is open (a refused
	// configuration) goes to a file beside the log.
	out, err := os.Create(s.outFile())
	if err != nil {
		return err
	}
	defer out.Close()
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	opt := s.Options()
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			said, _ := os.ReadFile(s.outFile())
			return fmt.Errorf("redis-server on %s exited at start (see %s): %s", s.Addr, s.Dir, bytes.TrimSpace(said))
		default:
		}
		if c.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("redis-server on %s did not answer within 10s", s.Addr)
}

// New starts a redis-server of the test's own in a temporary directory and
// stops it at cleanup.
func New(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s, err := Start(tb.TempDir(), extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on the same port and directory.
func (s *Server) Restart() error {
	if s.bin != "" {
		return s.start(s.bin)
	}
	bin, err := Binary()
	if err != nil {
		return err
	}
	return s.start(bin)
}

// Alive reports whether the server process is running.
func (s *Server) Alive() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }

// outFile is where the process's own output goes.
func (s *Server) outFile() string {
	_, port, _ := net.SplitHostPort(s.Addr)
	return filepath.Join(s.Dir, "redis-"+port+".out")
}

// Freeze stops the server process (SIGSTOP, by its PID): connections stay
// open and the kernel still accepts new ones, but nothing is answered, as
// with a Redis stuck in a long command, swapping, or behind a partition
// that drops packets. Thaw resumes it.
func (s *Server) Freeze() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("testredis: not started")
	}
	return s.cmd.Process.Signal(syscall.SIGSTOP)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("testredis: not started")
	}
	return s.cmd.Process.Signal(syscall.SIGCONT)
}

// Kill stops the server with SIGKILL and waits for it.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Stop stops the server with SIGTERM (SIGKILL after 5s) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a frozen server could not act on SIGTERM
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.Kill()
	}
}

// shared is the package-wide server started by Main.
var shared *Server

// Main starts one redis-server for a test package, runs the tests and
// stops it. KAIROS_TEST_REDIS_URL names an existing server instead.
func Main(m *testing.M) int {
	if os.Getenv("KAIROS_TEST_REDIS_URL") != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "kairos-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testredis:", err)
		return 1
	}
	shared = s
	defer s.Stop()
	return m.Run()
}

// URL returns the package's shared server URL.
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("KAIROS_TEST_REDIS_URL"); u != "" {
		return u
	}
	if shared == nil {
		tb.Fatal("testredis: no server; call testredis.Main from TestMain")
	}
	return shared.URL()
}

// Client returns a client of the shared server, closed at cleanup.
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// Prefix returns a key prefix no other test uses, so tests can run in parallel.
func Prefix(tb testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// Keys returns every key under prefix, sorted, for before/after
// comparisons; on a cluster it scans every master.
func Keys(tb testing.TB, c redis.UniversalClient, prefix string) []string {
	tb.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(out)
	return out
}
