package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// dockerBuild is the `go build` of the Dockerfile's build stage: the
// variables set before it, its arguments (after "go build") and the output
// path it names.
type dockerBuild struct {
	env  []string
	args []string
	out  string
}

// parseDockerBuild finds the one RUN line of a Dockerfile that runs
// `go build` and splits it as a shell would (quotes, VAR=value prefixes).
func parseDockerBuild(dockerfile string) (dockerBuild, error) {
	var found []string
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "RUN "); ok && strings.Contains(rest, "go build") {
			found = append(found, rest)
		}
	}
	if len(found) != 1 {
		return dockerBuild{}, fmt.Errorf("want one RUN line with `go build`, found %d", len(found))
	}
	words, err := shellWords(found[0])
	if err != nil {
		return dockerBuild{}, err
	}
	var b dockerBuild
	i := 0
	for ; i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-"); i++ {
		b.env = append(b.env, words[i])
	}
	if len(words) < i+2 || words[i] != "go" || words[i+1] != "build" {
		return dockerBuild{}, fmt.Errorf("RUN %s: want [VAR=value ...] go build ...", found[0])
	}
	b.args = words[i+2:]
	for j, w := range b.args {
		if w == "-o" && j+1 < len(b.args) {
			b.out = b.args[j+1]
		}
	}
	if b.out == "" {
		return dockerBuild{}, fmt.Errorf("RUN %s: no -o output path", found[0])
	}
	return b, nil
}

// shellWords splits s into words as sh does for a simple command with
// single and double quotes (no expansions, which the build line does not use).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '$' || r == '`' || r == '\\' || r == '&' || r == ';' || r == '|':
			return nil, fmt.Errorf("%q: the build line holds %q, which this test does not interpret", s, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unclosed quote", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestParseDockerBuild(t *testing.T) {
	b, err := parseDockerBuild("FROM x\nRUN go mod download\nRUN CGO_ENABLED=0 go build -trimpath -ldflags=\"-s -w\" -o /out/kairos ./cmd/kairos\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.env, []string{"CGO_ENABLED=0"}) || !slices.Equal(b.args, []string{"-trimpath", "-ldflags=-s -w", "-o", "/out/kairos", "./cmd/kairos"}) || b.out != "/out/kairos" {
		t.Errorf("parsed %+v", b)
	}
	for _, bad := range []string{"FROM x\n", "RUN go build ./cmd/kairos\n", "RUN go build -o k ./a\nRUN go build -o k ./b\n", "RUN go build -o $OUT ./cmd/kairos\n", "RUN go build -ldflags=\"-s -o k .\n"} {
		if _, err := parseDockerBuild(bad); err == nil {
			t.Errorf("parseDockerBuild(%q) accepted it", bad)
		}
	}
}

// TestDockerfileBuildCommandBuilds runs the Dockerfile's own `go build`
// line (its variables, flags and package; the output into a temporary
// folder), since no container engine runs where the tests do: a flag or
// path that stops working fails here, not at release. The binary must be
// static (the image is distroless/static) and answer -h.
func TestDockerfileBuildCommandBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: not in -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseDockerBuild(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.args, "./cmd/kairos") {
		t.Fatalf("the Dockerfile builds %v, not ./cmd/kairos", b.args)
	}
	bin := filepath.Join(t.TempDir(), "kairos")
	args := slices.Clone(b.args)
	args[slices.Index(args, b.out)] = bin
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), b.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", strings.Join(b.env, " "), cmd.Args, err, out)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary is dynamically linked; the distroless/static image needs a static one (CGO_ENABLED=0)")
			}
		}
	}
	out, err := exec.Command(bin, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kairos serve") {
		t.Errorf("%s -h: %v\n%s", bin, err, out)
	}
}
