// Package testproc runs `kairos serve`, or another program, as a child
// process for tests: kairos built once per test binary, each child started
// in its own process group, stopped by PID, its output kept and shown when
// the test fails.
package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary builds cmd/kairos once per test binary and returns its path.
var Binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kairos-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kairos")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kairos-sh/kairos/cmd/kairos").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/kairos: %w\n%s", err, out)
	}
	return bin, nil
})

// Buffer collects output written from several goroutines, in order.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Proc is a child process: `kairos serve` or what StartCmd started.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	out  *Buffer
	done chan struct{}
}

// Start runs `kairos serve` with env appended to this process's
// environment. The child is killed at cleanup if still running.
func Start(tb testing.TB, name string, env ...string) *Proc {
	tb.Helper()
	return StartArgs(tb, name, nil, env...)
}

// StartArgs is Start with flags after `kairos serve`.
func StartArgs(tb testing.TB, name string, args []string, env ...string) *Proc {
	tb.Helper()
	SkipShort(tb) // before the build
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return StartCmd(tb, name, cmd)
}

// StartCmd starts cmd, any program, the way Start starts kairos: in its own
// process group, its stdout and stderr kept (they must be unset), killed by
// PID at cleanup if still running. Under -short it skips the test.
func StartCmd(tb testing.TB, name string, cmd *exec.Cmd) *Proc {
	tb.Helper()
	SkipShort(tb)
	p := &Proc{Name: name, Cmd: cmd, out: &Buffer{}, done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = p.out, p.out
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { p.Cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		if tb.Failed() {
			tb.Logf("--- %s output:\n%s", p.Name, p.Output())
		}
	})
	return p
}

// SkipShort skips a test that runs child processes when the tests run with
// -short (make test-short, the quick tier); make test, which CI runs,
// passes no -short and runs it.
func SkipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts child processes: not in the quick tier (-short); make test runs it")
	}
}

// Output returns what the child printed so far.
func (p *Proc) Output() string { return p.out.String() }

// Done is closed when the child has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitCode returns the child's exit code once it has exited.
func (p *Proc) ExitCode() int { return p.Cmd.ProcessState.ExitCode() }

// Signal sends sig and waits for the child to exit (SIGKILL after 15s).
func (p *Proc) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Cmd.Process.Kill()
		<-p.done
	}
}

// WaitLog waits until the child's output contains s.
func (p *Proc) WaitLog(tb testing.TB, s string, within time.Duration) {
	tb.Helper()
	p.WaitMatch(tb, regexp.MustCompile(regexp.QuoteMeta(s)), within)
}

// WaitMatch waits until the child's output matches re and returns the
// first match.
func (p *Proc) WaitMatch(tb testing.TB, re *regexp.Regexp, within time.Duration) string {
	tb.Helper()
	s := re.String()
	deadline := time.Now().Add(within)
	for {
		if m := re.FindString(p.Output()); m != "" {
			return m
		}
		select {
		case <-p.done:
			tb.Fatalf("%s exited before logging %q", p.Name, s)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not log %q within %v", p.Name, s, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL waits for the child's "kairos listening" line and returns its URL
// (start it with KAIROS_ADDR=127.0.0.1:0 to get a free port).
func (p *Proc) URL(tb testing.TB) string {
	tb.Helper()
	p.WaitLog(tb, "kairos listening", 20*time.Second)
	out := p.Output()
	rest := out[strings.Index(out, "kairos listening"):]
	rest = rest[strings.Index(rest, "url=")+len("url="):]
	return strings.Fields(rest)[0]
}
