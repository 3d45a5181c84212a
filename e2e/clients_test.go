package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/spectest"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// The clients in other languages, under clients/. Each one's suite runs
// against a kairos process started here (KAIROS_URL, KAIROS_TOKEN): a first
// job end to end, its callback's signatures checked, besides unit tests
// that hold each method to openapi.yaml.
var clientSuites = []struct {
	lang  string
	dir   string
	tools []string
	// steps run in dir, in order; the last one is the suite.
	steps [][]string
	// method is the client's method name for an operationId, and def the
	// pattern of its definition in the client's sources.
	method func(op string) string
	def    string
	src    []string
}{
	{
		lang: "typescript", dir: "typescript", tools: []string{"node", "npm"},
		// npm ci installs exactly the lockfile (typescript, for tsc), from
		// npm's cache when it has it; npm test builds with tsc and runs
		// node's test runner.
		steps: [][]string{
			{"npm", "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund"},
			{"npm", "test"},
		},
		method: func(op string) string { return op },
		def:    `(?m)^  (?:async )?%s\(`,
		src:    []string{"src/client.ts"},
	},
	{
		lang: "python", dir: "python", tools: []string{"python3"},
		steps:  [][]string{{"python3", "-m", "unittest", "-v"}},
		method: snakeCase,
		def:    `(?m)^    def %s\(`,
		src:    []string{"kairos_client/client.py"},
	},
}

// designOperations are the routes DESIGN.md names that openapi.yaml does
// not describe yet, by the operationId they will get: each client has them
// too. Once openapi.yaml has one, the spec holds the clients to it.
var designOperations []string

// snakeCase turns an operationId into a Python method name: createJobs
// becomes create_jobs.
func snakeCase(op string) string {
	var b strings.Builder
	for i, r := range op {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestClientsCoverOpenAPI: every operation of openapi.yaml (but the
// metrics, the admin page and the spec itself, as the Go client's spec
// test) and every route DESIGN.md adds has a method in each client.
func TestClientsCoverOpenAPI(t *testing.T) {
	t.Parallel()
	var ops []string
	for _, item := range spectest.Must(t).Doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops = append(ops, op.OperationID)
		}
	}
	skip := []string{"metrics", "adminPage", "adminAsset", "getOpenAPI"}
	for _, op := range designOperations {
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	for _, c := range clientSuites {
		var src strings.Builder
		for _, f := range c.src {
			b, err := os.ReadFile(filepath.Join("..", "clients", c.dir, f))
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		var missing []string
		covered := 0
		for _, op := range ops {
			if slices.Contains(skip, op) {
				continue
			}
			if regexp.MustCompile(strings.ReplaceAll(c.def, "%s", regexp.QuoteMeta(c.method(op)))).MatchString(src.String()) {
				covered++
				continue
			}
			missing = append(missing, op+" ("+c.method(op)+")")
		}
		if len(missing) > 0 {
			t.Errorf("%s client: no method for %v", c.lang, missing)
		}
		t.Logf("%s client: %d operations of openapi.yaml and DESIGN.md covered, %d left out on purpose", c.lang, covered, len(skip))
	}
	// The check itself: a method the sources lack is reported.
	if regexp.MustCompile(strings.ReplaceAll(clientSuites[1].def, "%s", "no_such_op")).MatchString("    def create_job(") {
		t.Error("the definition pattern matches a method that is not there")
	}
}

// skipped matches the summary of a suite that skipped tests: node's test
// runner's and unittest's.
var skipped = regexp.MustCompile(`# skipped [1-9]|skipped=[1-9]`)

// TestClientSuites runs each client's own test suite against a kairos
// process on the package's redis-server. Without the language's tools the
// test is skipped, except under CI=true, where it fails.
func TestClientSuites(t *testing.T) {
	t.Parallel()
	for _, c := range clientSuites {
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			needTools(t, c.tools...)
			prefix := testredis.Prefix(t)
			procStore(t, prefix)
			p := startKairos(t, "kairos", prefix, "KAIROS_ROLES=api,scanner,worker")
			url := p.URL(t)
			tok, err := auth.New([]byte(secret), nil).Mint("acme", false, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			dir, err := filepath.Abs(filepath.Join("..", "clients", c.dir))
			if err != nil {
				t.Fatal(err)
			}
			env := []string{"KAIROS_URL=" + url, "KAIROS_TOKEN=" + tok, "KAIROS_E2E_REQUIRED=1", "PYTHONDONTWRITEBYTECODE=1"}
			for _, step := range c.steps {
				start := time.Now()
				out, err := command(env, dir, step[0], step[1:]...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s in clients/%s: %v\n%s", strings.Join(step, " "), c.dir, err, out)
				}
				if skipped.Match(out) {
					t.Fatalf("%s in clients/%s skipped tests; every one must run here:\n%s", strings.Join(step, " "), c.dir, out)
				}
				t.Logf("%s in clients/%s: ok after %v", strings.Join(step, " "), c.dir, time.Since(start).Round(time.Millisecond))
				if testing.Verbose() {
					t.Logf("%s", out)
				}
			}
		})
	}
}
