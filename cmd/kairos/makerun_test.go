package main

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testproc"
)

// TestMakeRunStopsCleanlyOnCtrlC runs `make run` as a terminal does, in a
// process group of its own, and interrupts the group as Ctrl-C does once
// kairos listens: kairos shuts down gracefully and make reports no error
// (`go run` exits 1 when interrupted, whatever its program did, which made
// make print `make: *** [Makefile: run] Error 1`).
func TestMakeRunStopsCleanlyOnCtrlC(t *testing.T) {
	testproc.SkipShort(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found")
	}
	if signal.Ignored(syscall.SIGINT) {
		t.Skip("this test process ignores SIGINT (started in the background?), and so would make and kairos")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "run")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KAIROS_ADDR=127.0.0.1:0", "KAIROS_REDIS_URL=", "KAIROS_AUTH_SECRET=", "XDG_CONFIG_HOME="+t.TempDir())
	p := testproc.StartCmd(t, "make run", cmd)
	p.WaitLog(t, "kairos listening", 5*time.Minute) // a build first
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("make run still runs 60s after Ctrl-C:\n%s", p.Output())
	}
	out := p.Output()
	if !strings.Contains(out, "kairos stopped") {
		t.Errorf("kairos did not stop gracefully:\n%s", out)
	}
	if strings.Contains(out, "make: ***") {
		t.Errorf("make reports an error after Ctrl-C:\n%s", out)
	}
}
