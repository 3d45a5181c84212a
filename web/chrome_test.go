package web

// The browser side of the browser test: headless Chromium driven with
// chromedp, one tab, steps that fail the test with a screenshot.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium. A missing browser fails the test, never
// skips it: `make test` installs it (scripts/test-deps.sh). Only -short
// (make test-short, the quick tier) skips a browser test.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives Chromium: not in the quick tier (-short); make test runs it")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	ci := ""
	if os.Getenv("CI") == "true" {
		ci = " (CI=true)"
	}
	t.Fatalf("chromium not found at /usr/bin/chromium or on PATH%s: install chromium: run make test (scripts/test-deps.sh installs Debian's chromium with apt-get)", ci)
	return ""
}

// browser drives one headless Chromium tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
	logs *lockedBuffer // console messages
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser with no deadline
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, base: base, dir: artifactDir(t), logs: &lockedBuffer{}}
	os.Remove(filepath.Join(b.dir, "failure.png")) // from an earlier run
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			fmt.Fprintf(b.logs, "%s [%s] %s\n", m.Type, m.Source, m.Text)
		}
	}()
	return b
}

// do runs steps with a deadline; on failure it saves a screenshot and fails.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	b.shot("failure")
	text, _ := run(b, chromedp.Evaluate[string](`document.body.innerText`))
	b.t.Fatalf("%s: %v\n--- page text:\n%s\n--- console:\n%s", what, err, text, b.logs.String())
}

func run[T any](b *browser, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, a)
}

func js(v any) string {
	s, _ := json.Marshal(v)
	return string(s)
}

// slack stretches every wait: the deadlines below are what an idle machine
// needs, and a loaded CI runner (or a parallel `go test ./...`) may take
// several times that. A wait that succeeds returns at once anyway.
const slack = 3

// waitJS waits until the JavaScript expression is truthy.
func (b *browser) waitJS(what, expr string, within time.Duration) {
	b.t.Helper()
	within *= slack
	ctx, cancel := context.WithTimeout(b.ctx, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(within))); err != nil {
		b.fail("waiting for "+what, err)
	}
}

// waitText waits until the element matching css contains text.
func (b *browser) waitText(css, text string, within time.Duration) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%s to contain %q", css, text),
		fmt.Sprintf(`(document.querySelector(%s)?.textContent || '').includes(%s)`, js(css), js(text)), within)
}

func (b *browser) text(css string) string {
	b.t.Helper()
	s, err := run(b, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%s)?.textContent ?? ''`, js(css))))
	if err != nil {
		b.fail("read "+css, err)
	}
	return s
}

func (b *browser) eval(what, expr string) {
	b.t.Helper()
	if _, err := run(b, chromedp.Evaluate[chromedp.Void](expr)); err != nil {
		b.fail(what, err)
	}
}

// fill sets form fields by id (inputs, textareas, selects by option label).
func (b *browser) fill(fields map[string]string) {
	b.t.Helper()
	for id, v := range fields {
		// A select is filled when its view has loaded: wait for the option.
		b.waitJS(fmt.Sprintf("#%s to offer %q", id, v), fmt.Sprintf(`(() => {
			const el = document.getElementById(%s), v = %s;
			return el && (el.tagName !== 'SELECT' || [...el.options].some((o) => o.textContent === v || o.value === v));
		})()`, js(id), js(v)), 10*time.Second)
		b.eval("fill #"+id, fmt.Sprintf(`(() => {
			const el = document.getElementById(%s), v = %s;
			if (!el) throw new Error('no element #' + %s);
			if (el.tagName === 'SELECT') {
				const o = [...el.options].find((o) => o.textContent === v || o.value === v);
				if (!o) throw new Error('no option ' + v + ' in #' + el.id + ': ' + [...el.options].map((o) => o.textContent));
				el.value = o.value;
			} else el.value = v;
			el.dispatchEvent(new Event('input', { bubbles: true }));
			el.dispatchEvent(new Event('change', { bubbles: true }));
		})()`, js(id), js(v), js(id)))
	}
}

func (b *browser) click(testid string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	var err error
	for range 5 {
		// a view that draws itself again (a list refreshed every 2 s) may
		// replace the node between its lookup and the click, which then
		// never happened: look it up again
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-testid=%q], [id=%q]`, testid, testid))))
		if err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
			break
		}
	}
	if err != nil {
		b.fail("click "+testid, err)
	}
}

func (b *browser) nav(view string) {
	b.t.Helper()
	b.click("nav-" + view)
	b.do("show "+view, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-testid=%q]`, view))))
}

// shot saves a full-page PNG in the artifact dir and returns its path.
func (b *browser) shot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

// on returns b reporting to t, for use inside t.Run.
func (b *browser) on(t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
}

// load runs trigger and waits for the page load it causes.
func (b *browser) load(what string, trigger chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, trigger)); err != nil {
		b.fail(what, err)
	}
}

// signIn pastes token into the sign-in form; the page reloads signed in.
func (b *browser) signIn(token string) {
	b.t.Helper()
	b.do("the sign-in form", chromedp.WaitVisible(chromedp.ID("token-input")), chromedp.SetValue(chromedp.ID("token-input"), token))
	b.load("sign in", chromedp.Click(chromedp.ID("signin-submit")))
	b.do("see the overview", chromedp.WaitVisible(chromedp.CSS(`[data-testid="overview"]`)))
}

// lockedBuffer collects console messages from the browser's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
