package testwait

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a Fatalf and ends its goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run runs fn with a fakeTB and returns its Fatalf message, "" when none.
func run(fn func(tb testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.msg
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var looks atomic.Int64
	msg := run(func(tb testing.TB) {
		Until(tb, Patience, func() bool { return looks.Add(1) == 3 }, "the third look")
	})
	if msg != "" || looks.Load() != 3 {
		t.Errorf("failed %q after %d looks, want success at the third", msg, looks.Load())
	}
}

func TestUntilFailsNamingWhatItWaitedFor(t *testing.T) {
	msg := run(func(tb testing.TB) { Until(tb, 20*time.Millisecond, func() bool { return false }, "the moon") })
	if !strings.Contains(msg, "the moon") || !strings.Contains(msg, "20ms") {
		t.Errorf("failed with %q, want the deadline and what was waited for", msg)
	}
}

func TestUntilNilReportsTheLastError(t *testing.T) {
	var n atomic.Int64
	msg := run(func(tb testing.TB) {
		UntilNil(tb, 20*time.Millisecond, func() error { return fmt.Errorf("look %d", n.Add(1)) }, "a job")
	})
	if want := fmt.Sprintf("look %d", n.Load()); !strings.HasSuffix(msg, want) || !strings.Contains(msg, "a job") {
		t.Errorf("failed with %q, want it to end with the last error %q", msg, want)
	}
	if msg := run(func(tb testing.TB) { UntilNil(tb, Patience, func() error { return nil }, "x") }); msg != "" {
		t.Errorf("failed %q with a check that passes", msg)
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan error, 1)
	want := errors.New("v")
	ch <- want
	var got error
	if msg := run(func(tb testing.TB) { got = Receive(tb, Patience, ch, "a value") }); msg != "" || got != want {
		t.Errorf("got %v (failed %q), want the value sent", got, msg)
	}
	if msg := run(func(tb testing.TB) { Receive(tb, 10*time.Millisecond, ch, "a second value") }); !strings.Contains(msg, "a second value") {
		t.Errorf("failed with %q, want what was waited for", msg)
	}
}
