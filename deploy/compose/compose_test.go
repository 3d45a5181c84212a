// Package compose holds the test of compose.yaml, kairos and a Redis with
// AOF for docker compose. No container engine runs here: the test reads
// the file's structure and hands kairos's configuration to the parser that
// `kairos serve` uses.
package compose

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kairos-sh/kairos/internal/server"
)

// file is the part of a compose file the test reads.
type file struct {
	Services map[string]struct {
		Command []string `yaml:"command"`
		Build   *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Environment map[string]string       `yaml:"environment"`
		DependsOn   map[string]dependsOnSvc `yaml:"depends_on"`
		Volumes     []string                `yaml:"volumes"`
		Ports       []string                `yaml:"ports"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

type dependsOnSvc struct {
	Condition string `yaml:"condition"`
}

// interpolation is compose's ${NAME}, ${NAME:-default} and ${NAME:?error}.
var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}`)

// TestComposeFile: the kairos service is built from the repository's
// Dockerfile and waits for a healthy Redis; Redis keeps an append-only
// file, fsynced every second, on a named volume, and does not evict;
// KAIROS_AUTH_SECRET must come from .env (compose refuses to start
// without it) and .env.example names it; and kairos accepts the
// configuration, once interpolated, with the command's flags.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f file
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	redis, ok := f.Services["redis"]
	if !ok {
		t.Fatal("no redis service")
	}
	kairos, ok := f.Services["kairos"]
	if !ok {
		t.Fatal("no kairos service")
	}

	// Redis: AOF on a volume, noeviction, a health check kairos waits for.
	cmd := strings.Join(redis.Command, " ")
	for _, want := range []string{"redis-server", "--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command %q lacks %q", cmd, want)
		}
	}
	var dataVolume string
	for _, v := range redis.Volumes {
		if src, dst, _ := strings.Cut(v, ":"); dst == "/data" {
			dataVolume = src
		}
	}
	if _, declared := f.Volumes[dataVolume]; dataVolume == "" || !declared {
		t.Errorf("redis volumes %v: want a named volume (declared under volumes:) on /data, where the AOF is written", redis.Volumes)
	}
	if redis.Healthcheck == nil || !slices.Contains(redis.Healthcheck.Test, "ping") {
		t.Error("redis has no health check (redis-cli ping)")
	}
	if d, ok := kairos.DependsOn["redis"]; !ok || d.Condition != "service_healthy" {
		t.Errorf("kairos depends_on %v: want redis with condition service_healthy", kairos.DependsOn)
	}

	// kairos: built from the repository's Dockerfile.
	if kairos.Build == nil {
		t.Fatal("kairos has no build section")
	}
	df := filepath.Join(kairos.Build.Context, kairos.Build.Dockerfile)
	if abs, _ := filepath.Abs(filepath.Dir(df)); abs != mustAbs(t, "../..") {
		t.Errorf("kairos builds %s; want the repository's Dockerfile (context ../..)", df)
	}
	if _, err := os.Stat(df); err != nil {
		t.Errorf("kairos's Dockerfile: %v", err)
	}

	// The auth secret: required from the environment or .env, never written here.
	raw := kairos.Environment["KAIROS_AUTH_SECRET"]
	if m := interpolation.FindStringSubmatch(raw); m == nil || m[0] != raw || m[1] != "KAIROS_AUTH_SECRET" || m[2] != "?" {
		t.Errorf("KAIROS_AUTH_SECRET is %q; want ${KAIROS_AUTH_SECRET:?...}, so that compose refuses to start without one", raw)
	}
	example := envFile(t, ".env.example")
	if _, ok := example["KAIROS_AUTH_SECRET"]; !ok {
		t.Error(".env.example does not name KAIROS_AUTH_SECRET")
	}
	if ignore, err := os.ReadFile("../../.gitignore"); err != nil || !slices.Contains(strings.Split(string(ignore), "\n"), "/deploy/compose/.env") {
		t.Errorf("deploy/compose/.env, which holds the secret, is not in .gitignore (%v)", err)
	}
	if host := redisHost(kairos.Environment["KAIROS_REDIS_URL"]); f.Services[host].Command == nil {
		t.Errorf("KAIROS_REDIS_URL %q does not name the redis service", kairos.Environment["KAIROS_REDIS_URL"])
	}

	// kairos accepts the configuration, interpolated as compose would with
	// .env.example's values and a secret filled in.
	values := map[string]string{"KAIROS_AUTH_SECRET": strings.Repeat("s", 32)}
	for k, v := range example {
		if v != "" {
			values[k] = v
		}
	}
	env := map[string]string{}
	for k, v := range kairos.Environment {
		env[k] = interpolation.ReplaceAllStringFunc(v, func(ref string) string {
			m := interpolation.FindStringSubmatch(ref)
			if v, ok := values[m[1]]; ok {
				return v
			}
			if m[2] == "-" {
				return m[3]
			}
			t.Errorf("%s: ${%s} has no value in .env.example and no default", k, m[1])
			return ""
		})
	}
	asked := map[string]bool{}
	getenv := func(name string) string { asked[name] = true; return env[name] }
	if len(kairos.Command) == 0 || kairos.Command[0] != "serve" {
		t.Fatalf("kairos command %v: want serve ...", kairos.Command)
	}
	cfg, err := server.ParseConfig(kairos.Command[1:], getenv, io.Discard)
	if err != nil {
		t.Fatalf("kairos refuses the compose configuration: %v", err)
	}
	for k := range env {
		if !asked[k] {
			t.Errorf("%s is set but kairos serve never reads it", k)
		}
	}
	if server.RoleList(cfg) != "api,scanner,worker" || cfg.MetricsAddr == "" {
		t.Errorf("roles %s, metrics address %q: want every role and /metrics on its own port", server.RoleList(cfg), cfg.MetricsAddr)
	}
	for _, port := range []string{"8080", strings.TrimPrefix(cfg.MetricsAddr, ":")} {
		published := false
		for _, p := range kairos.Ports {
			published = published || strings.HasSuffix(p, ":"+port)
		}
		if !published {
			t.Errorf("kairos ports %v do not publish %s", kairos.Ports, port)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// envFile reads NAME=value lines, skipping comments and blank lines.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s: %q is not NAME=value", path, line)
			continue
		}
		m[k] = v
	}
	return m
}

// redisHost is the host of a redis:// URL.
func redisHost(u string) string {
	rest, _ := strings.CutPrefix(u, "redis://")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	host, _, _ := strings.Cut(rest, ":")
	host, _, _ = strings.Cut(host, "/")
	return host
}
