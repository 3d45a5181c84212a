package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// The examples of the documentation, run: every fenced block of code in
// README.md, docs/*.md and the clients' READMEs is marked by an HTML
// comment on the line before it (invisible where the page is rendered):
//
//	<!-- example: run -->                     run it; it must succeed
//	<!-- example: run, expect "TEXT" -->      and TEXT must then show in the output of the file's background blocks
//	<!-- example: background, ready "TEXT" --> start it, wait for TEXT in its output; it runs until the file's blocks are done
//	<!-- example: background, ready "TEXT", callback "/PATH" -->
//	                                          then kairos sends it a signed callback at /PATH, which it must accept
//	<!-- example: not run (WHY) -->           say why it is not run
//
// A file may give every block a default with <!-- examples: not run (WHY) -->.
// A block of shell, Go, TypeScript, JavaScript or Python without a mark
// fails the test: a new example is either run or says why not.
//
// Each file's blocks run in order, against one kairos (api, scanner and
// worker) on the package's redis-server, with an admin token of a tenant of
// the file's own, as a user who copied them would run them:
//   - sh: bash -e with pipefail; curl fails on an HTTP error status
//     (--fail-with-body); $K, $T, $J, $TOKEN, $KAIROS, $ADMIN_TOKEN and
//     KAIROS_URL, KAIROS_TOKEN are set as docs/api.md says, kairos (built
//     once) is on PATH, and the working directory is the repository's root;
//   - go: a program in a module that requires this one through the
//     documented replace directive (clientinstall_test.go); a block with no
//     package clause is the body of func run(ctx context.Context) error;
//   - ts: checked with the client's tsc against the packed client installed
//     into a project, then run with node;
//   - python: run with the python of a virtual environment the client was
//     installed into from its folder.
//
// What a reader fills in is filled in: eyJ... is the token, whsec_... the
// tenant's signing secret, http://127.0.0.1:8080 and
// https://kairos.example.com the kairos under test, port 9000 and
// https://(api.)example.com/hooks/orders a free loopback port for the
// file's receivers, redis://127.0.0.1:6379 the test's redis-server (with a
// key prefix of the file's own), and `go run ./cmd/kairos` is the kairos
// binary built once.

// docFiles are the documents whose examples run.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "clients/typescript/README.md", "clients/python/README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot(), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	return files
}

// codeLangs are the languages of blocks that must be marked.
var codeLangs = map[string]bool{"sh": true, "bash": true, "go": true, "ts": true, "js": true, "python": true}

// docBlock is one fenced block of code and its mark.
type docBlock struct {
	file, lang, code string
	line             int
	mark             docMark
}

type docMark struct {
	text                    string // as written
	run, background         bool
	why                     string // not run: why
	ready, expect, callback string
}

var (
	fenceLine   = regexp.MustCompile("^```([a-z]*)\\s*$")
	markLine    = regexp.MustCompile(`^<!--\s*example:\s*(.*?)\s*-->\s*$`)
	fileMark    = regexp.MustCompile(`(?m)^<!--\s*examples:\s*(.*?)\s*-->\s*$`)
	markOptions = regexp.MustCompile(`(ready|expect|callback)\s+"([^"]*)"`)
)

// parseMark reads a mark's text; ok is false when it is not one of the
// forms above.
func parseMark(s string) (docMark, bool) {
	m := docMark{text: s}
	if why, ok := strings.CutPrefix(s, "not run"); ok {
		m.why = strings.Trim(strings.TrimSpace(why), ":() ")
		return m, m.why != ""
	}
	first, rest, _ := strings.Cut(s, ",")
	switch strings.TrimSpace(first) {
	case "run":
		m.run = true
	case "background":
		m.run, m.background = true, true
	default:
		return m, false
	}
	left := markOptions.ReplaceAllStringFunc(rest, func(o string) string {
		sm := markOptions.FindStringSubmatch(o)
		switch sm[1] {
		case "ready":
			m.ready = sm[2]
		case "expect":
			m.expect = sm[2]
		case "callback":
			m.callback = sm[2]
		}
		return ""
	})
	if strings.Trim(left, ", ") != "" || (m.background && m.ready == "") || (!m.background && (m.ready != "" || m.callback != "")) {
		return m, false
	}
	return m, true
}

// docBlocks returns the fenced blocks of file (relative to the
// repository's root), each with its mark, and the problems found: a code
// block without a mark, a mark that does not parse.
func docBlocks(file string) ([]docBlock, []string, error) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), file))
	if err != nil {
		return nil, nil, err
	}
	var def *docMark
	if fm := fileMark.FindSubmatch(b); fm != nil {
		m, ok := parseMark(string(fm[1]))
		if !ok {
			return nil, []string{fmt.Sprintf("%s: the mark <!-- examples: %s --> does not parse", file, fm[1])}, nil
		}
		def = &m
	}
	var blocks []docBlock
	var problems []string
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		f := fenceLine.FindStringSubmatch(lines[i])
		if f == nil || f[1] == "" {
			if f != nil { // a fence without a language: skip to its end
				for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				}
			}
			continue
		}
		blk := docBlock{file: file, lang: f[1], line: i + 1}
		var code []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			code = append(code, lines[i])
		}
		blk.code = strings.Join(code, "\n") + "\n"
		marked := false
		if blk.line >= 2 {
			if mm := markLine.FindStringSubmatch(lines[blk.line-2]); mm != nil {
				m, ok := parseMark(mm[1])
				if !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: the mark <!-- example: %s --> does not parse", file, blk.line-1, mm[1]))
				}
				blk.mark, marked = m, true
			}
		}
		if !marked && def != nil {
			blk.mark, marked = *def, true
		}
		if !marked && codeLangs[blk.lang] {
			problems = append(problems, fmt.Sprintf("%s:%d: a %s block without a mark: put <!-- example: run --> (or background, or not run (why)) on the line before it", file, blk.line, blk.lang))
		}
		if marked {
			blocks = append(blocks, blk)
		}
	}
	return blocks, problems, nil
}

// TestDocExamplesAreMarked: every block of code in the documentation is
// marked (run, background, or not run and why), and every mark parses.
func TestDocExamplesAreMarked(t *testing.T) {
	t.Parallel()
	run := 0
	for _, f := range docFiles(t) {
		blocks, problems, err := docBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		for _, b := range blocks {
			if b.mark.run {
				run++
			}
		}
	}
	// the check itself
	if _, ok := parseMark(`background, expect "x"`); ok {
		t.Error(`a background mark without ready parses`)
	}
	if m, ok := parseMark(`not run (a benchmark)`); !ok || m.why != "a benchmark" {
		t.Errorf("not run (a benchmark): %+v %v", m, ok)
	}
	t.Logf("%d blocks of the documentation run", run)
}

// docRun is the running of one file's examples.
type docRun struct {
	t          *testing.T
	url, token string
	port       int
	c          *client.Client
	env        []string
	dir        string // scratch space of the file's blocks
	background []*testproc.Proc
	n          int
}

// TestDocExamples runs the examples of the documentation, file by file,
// against a real kairos, as described above.
func TestDocExamples(t *testing.T) {
	needTools(t, "curl", "jq", "openssl", "node", "npm", "python3")
	prefix := testredis.Prefix(t)
	procStore(t, prefix)
	p := startKairos(t, "kairos", prefix, "KAIROS_ROLES=api,scanner,worker", "KAIROS_READY_LEASE=10s")
	url := p.URL(t)
	bin, err := testproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docFiles(t) {
		blocks, problems, err := docBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) > 0 {
			t.Fatalf("unmarked or malformed examples (TestDocExamplesAreMarked): %v", problems)
		}
		runnable := 0
		for _, b := range blocks {
			if b.mark.run {
				runnable++
			}
		}
		if runnable == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(f, "/", "_"), func(t *testing.T) {
			tenant := "docs-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(strings.TrimSuffix(f, ".md")), "-"), "-")
			r := newDocRun(t, url, tenant, prefix+"-"+tenant, filepath.Dir(bin))
			for _, b := range blocks {
				if !b.mark.run {
					t.Logf("%s:%d (%s) not run: %s", b.file, b.line, b.lang, b.mark.why)
					continue
				}
				r.block(b)
			}
		})
	}
}

func newDocRun(t *testing.T, url, tenant, prefix, binDir string) *docRun {
	t.Helper()
	tok, err := auth.New([]byte(secret), nil).Mint(tenant, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(url, client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.GetSigningKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &docRun{t: t, url: url, token: tok, port: port, c: c, dir: t.TempDir()}
	r.env = []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"K=" + url, "KAIROS=" + url, "KAIROS_URL=" + url,
		"TOKEN=" + tok, "KAIROS_TOKEN=" + tok, "ADMIN_TOKEN=" + tok,
		"T=Authorization: Bearer " + tok, "J=Content-Type: application/json",
		"KAIROS_SECRET_CURRENT=" + keys.Current, "KAIROS_SECRET_NEXT=" + keys.Next,
		// kairos processes an example starts keep to a prefix of their own
		// and to a free port, and keep dev secrets out of $HOME
		"KAIROS_PREFIX=" + prefix, "KAIROS_ADDR=127.0.0.1:0", "XDG_CONFIG_HOME=" + t.TempDir(),
		"PYTHONDONTWRITEBYTECODE=1",
	}
	t.Cleanup(func() {
		for _, p := range r.background {
			syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return r
}

// fill puts the test's values in the places a reader fills in.
func (r *docRun) fill(code string) string {
	hook := fmt.Sprintf("http://127.0.0.1:%d/hooks/orders", r.port)
	code = strings.NewReplacer(
		"go run ./cmd/kairos", "kairos",
		"http://127.0.0.1:8080", r.url,
		"https://kairos.example.com", r.url,
		"redis://127.0.0.1:6379", testredis.URL(r.t),
		"https://api.example.com/hooks/orders", hook,
		"https://example.com/hooks/orders", hook,
		"eyJ...", r.token,
		"whsec_...", r.envValue("KAIROS_SECRET_CURRENT"),
	).Replace(code)
	return regexp.MustCompile(`\b9000\b`).ReplaceAllString(code, strconv.Itoa(r.port))
}

func (r *docRun) envValue(name string) string {
	for _, e := range r.env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	return ""
}

// shPreamble stops a shell block at its first failure, and makes curl
// fail on an HTTP error status, as a reader would notice one.
const shPreamble = "set -eo pipefail\ncurl() { command curl -sS --fail-with-body --max-time 20 \"$@\"; echo; }\n"

// block runs one marked block.
func (r *docRun) block(b docBlock) {
	t := r.t
	r.n++
	where := fmt.Sprintf("%s:%d (%s)", b.file, b.line, b.lang)
	code := r.fill(b.code)
	cmd, err := r.command(b.lang, code)
	if err != nil {
		t.Fatalf("%s: %v\n%s", where, err, code)
	}
	if b.mark.background {
		p := testproc.StartCmd(t, where, cmd)
		r.background = append(r.background, p)
		p.WaitLog(t, b.mark.ready, 60*time.Second)
		t.Logf("%s: started, said %q", where, b.mark.ready)
		if b.mark.callback != "" {
			r.callback(where, b.mark.callback)
		}
		return
	}
	start := time.Now()
	// The output goes to a file, not a pipe: what the block starts in the
	// background (kairos serve &) holds its output open past its end.
	outFile, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("example%d.out", r.n)))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		err = fmt.Errorf("still running after 2 minutes")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it started in the background too
	out, _ := os.ReadFile(outFile.Name())
	if err != nil {
		t.Fatalf("%s failed: %v\n--- the example as run:\n%s--- its output:\n%s%s", where, err, code, out, r.backgroundOutput())
	}
	t.Logf("%s: ok after %v", where, time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	if b.mark.expect != "" {
		testwait.UntilNil(t, 30*time.Second, func() error {
			if out := r.backgroundOutput(); !strings.Contains(out, b.mark.expect) {
				return fmt.Errorf("the output so far:%s", out)
			}
			return nil
		}, fmt.Sprintf("%s: %q showing", where, b.mark.expect))
		t.Logf("%s: then %q showed", where, b.mark.expect)
	}
}

func (r *docRun) backgroundOutput() string {
	var b strings.Builder
	for _, p := range r.background {
		fmt.Fprintf(&b, "\n--- %s:\n%s", p.Name, p.Output())
	}
	return b.String()
}

// command is the command that runs code of lang.
func (r *docRun) command(lang, code string) (*exec.Cmd, error) {
	name := fmt.Sprintf("example%d", r.n)
	switch lang {
	case "sh", "bash":
		return command(r.env, repoRoot(), "bash", "-c", shPreamble+code), nil
	case "python":
		py, err := pyInstall()
		if err != nil {
			return nil, err
		}
		f := filepath.Join(r.dir, name+".py")
		if err := os.WriteFile(f, []byte(code), 0o644); err != nil {
			return nil, err
		}
		return command(r.env, r.dir, py, f), nil
	case "ts":
		return r.typescript(name, code)
	case "go":
		return r.golang(name, code)
	}
	return nil, fmt.Errorf("no runner for %s blocks: mark it not run, and why", lang)
}

// typescript checks code with the client's tsc against the installed
// package and returns the command that runs what tsc made of it.
func (r *docRun) typescript(name, code string) (*exec.Cmd, error) {
	ts, err := tsInstall()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ts.dir, name+".ts"), []byte(code), 0o644); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`{"compilerOptions": {"target": "ES2022", "module": "ES2022", "moduleResolution": "Bundler", "strict": true,
  "skipLibCheck": true, "outDir": "out", "typeRoots": [%q], "types": ["node"]}, "files": [%q]}`, ts.types, name+".ts")
	if err := os.WriteFile(filepath.Join(ts.dir, name+".tsconfig.json"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if out, err := command(nil, ts.dir, "node", ts.tsc, "-p", name+".tsconfig.json").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tsc: %v\n%s", err, out)
	}
	return command(r.env, ts.dir, "node", filepath.Join("out", name+".js")), nil
}

// goHarness makes a block with no package clause the body of run.
const goHarness = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/verify"
)

var (
	_ = json.Valid
	_ = errors.As
	_ = fmt.Sprint
	_ = http.StatusOK
	_ = os.Getenv
	_ = time.Second
	_ = client.New
	_ = verify.Callback
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
%s
	return nil
}
`

// golang builds code in the module the client was installed into and
// returns the command that runs the program.
func (r *docRun) golang(name, code string) (*exec.Cmd, error) {
	mod, err := goInstall()
	if err != nil {
		return nil, err
	}
	if !regexp.MustCompile(`(?m)^package `).MatchString(code) {
		var body strings.Builder
		sc := bufio.NewScanner(strings.NewReader(code))
		for sc.Scan() {
			body.WriteString("\t" + sc.Text() + "\n")
		}
		code = fmt.Sprintf(goHarness, body.String())
	}
	dir := filepath.Join(mod, r.t.Name(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(r.dir, name)
	if out, err := command([]string{"GOFLAGS=-mod=mod", "GOPROXY=off"}, dir, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return command(r.env, r.dir, bin), nil
}

// callback has kairos send a job of a topic of the file's tenant to the
// file's receiver at path, and waits until the receiver accepted it: a
// receiver that refuses the signatures leaves it retrying.
func (r *docRun) callback(where, path string) {
	t := r.t
	ctx := context.Background()
	topic := "example-receiver"
	if _, _, err := r.c.PutTopic(ctx, topic, client.TopicRequest{CallbackURL: fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path)}); err != nil {
		t.Fatal(err)
	}
	j, err := r.c.CreateJob(ctx, topic, client.JobRequest{Payload: []byte(`{"hello": "receiver"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got *client.Job
	testwait.UntilNil(t, 30*time.Second, func() (err error) {
		if got, err = r.c.GetJob(ctx, topic, j.ID); err != nil {
			t.Fatal(err)
		}
		switch got.State {
		case client.StateDelivered:
			return nil
		case client.StateScheduled, client.StateReady, client.StateActive:
			return fmt.Errorf("it is %s: %+v%s", got.State, got.LastAttempt, r.backgroundOutput())
		}
		t.Fatalf("%s: the callback is %s, want delivered: %+v%s", where, got.State, got.LastAttempt, r.backgroundOutput())
		return nil
	}, where+": the callback delivered")
	t.Logf("%s: accepted a signed callback (status %d)", where, got.LastAttempt.Status)
}
