package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The clients installed from this repository as their documentation says
// (README.md, clients/*/README.md), once per test binary: TestClientInstalls
// checks the commands, and TestDocExamples runs the examples against these
// installs, as a user who copied them would.

// installs holds what the installs left on disk; TestMain removes it.
var installs struct {
	sync.Mutex
	dirs []string
}

func installDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "kairos-"+name+"-")
	if err != nil {
		return "", err
	}
	installs.Lock()
	installs.dirs = append(installs.dirs, dir)
	installs.Unlock()
	return dir, nil
}

// removeInstalls removes what the installs left on disk.
func removeInstalls() {
	installs.Lock()
	defer installs.Unlock()
	for _, d := range installs.dirs {
		os.RemoveAll(d)
	}
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	root, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	return root
}

// The documented install commands, each held to the document that gives
// it (TestClientInstalls): what a user runs from a clone of the repository.
const (
	// Go, until the module is published (then: go get github.com/kairos-sh/kairos/client),
	// in the user's module with the clone at ../kairos.
	goInstallEdit = "go mod edit -require=github.com/kairos-sh/kairos@v0.0.0 -replace=github.com/kairos-sh/kairos=../kairos"
	goInstallTidy = "go mod tidy"
	// TypeScript: a packed tarball, installed into the user's project.
	tsPackLine    = "npm ci && npm run build && npm pack"
	tsInstallLine = "npm install /path/to/kairos/clients/typescript/kairos-sh-client-0.1.0.tgz"
	// Python: into a virtual environment, from the folder.
	pyVenvLine    = "python3 -m venv .venv"
	pyInstallLine = ".venv/bin/pip install /path/to/kairos/clients/python"
)

// run runs a shell command line in dir with env added, and returns its
// combined output; the error names the command and holds the output.
func runLine(env []string, dir, line string) (string, error) {
	out, err := command(env, dir, "bash", "-eo", "pipefail", "-c", line).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s (in %s): %w\n%s", line, dir, err, out)
	}
	return string(out), nil
}

// goInstall is a Go module that requires the kairos module through the
// documented replace directive, ready to build programs that import
// github.com/kairos-sh/kairos/client and .../verify.
var goInstall = sync.OnceValues(func() (string, error) {
	dir, err := installDir("go")
	if err != nil {
		return "", err
	}
	mod := filepath.Join(dir, "app")
	if err := os.Mkdir(mod, 0o755); err != nil {
		return "", err
	}
	// The clone sits at ../kairos beside the user's module.
	if err := os.Symlink(repoRoot(), filepath.Join(dir, "kairos")); err != nil {
		return "", err
	}
	// sum.golang.org is out of reach here: the clone's go.sum holds the
	// checksums go mod tidy would fetch.
	sum, err := os.ReadFile(filepath.Join(repoRoot(), "go.sum"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		return "", err
	}
	main := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/kairos-sh/kairos/client\"\n\t\"github.com/kairos-sh/kairos/verify\"\n)\n\n" +
		"func main() {\n\t_, err := client.New(\"http://127.0.0.1:1\")\n\tfmt.Println(\"client and verify imported\", err == nil, verify.Options{}.URL == \"\")\n}\n"
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(main), 0o644); err != nil {
		return "", err
	}
	env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off"}
	for _, line := range []string{"go mod init example.com/app", goInstallEdit, goInstallTidy} {
		if _, err := runLine(env, mod, line); err != nil {
			return "", err
		}
	}
	return mod, nil
})

// tsInstalled is a Node project with the packed client installed, and
// what checks TypeScript against it.
type tsInstalled struct {
	dir   string // the project: package.json of type module, node_modules/@kairos-sh/client
	tsc   string // the client's pinned tsc
	types string // @types of the client's devDependencies (node's, for the READMEs' examples)
}

var tsInstall = sync.OnceValues(func() (tsInstalled, error) {
	dir, err := installDir("ts")
	if err != nil {
		return tsInstalled{}, err
	}
	// A copy of clients/typescript, so that the build and the tarball land
	// outside the source tree.
	src := filepath.Join(repoRoot(), "clients", "typescript")
	pack := filepath.Join(dir, "kairos", "clients", "typescript")
	if err := os.MkdirAll(pack, 0o755); err != nil {
		return tsInstalled{}, err
	}
	for _, f := range []string{"package.json", "package-lock.json", "tsconfig.json", "README.md", "src"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(src, f), pack).CombinedOutput(); err != nil {
			return tsInstalled{}, fmt.Errorf("copy %s: %v %s", f, err, out)
		}
	}
	if _, err := runLine(nil, pack, strings.Replace(tsPackLine, "npm ci", "npm ci --prefer-offline --no-audit --no-fund", 1)); err != nil {
		return tsInstalled{}, err
	}
	app := filepath.Join(dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		return tsInstalled{}, err
	}
	if err := os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "app", "private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		return tsInstalled{}, err
	}
	line := strings.Replace(tsInstallLine, "/path/to/kairos", filepath.Join(dir, "kairos"), 1) + " --no-audit --no-fund"
	if _, err := runLine(nil, app, line); err != nil {
		return tsInstalled{}, err
	}
	return tsInstalled{dir: app, tsc: filepath.Join(pack, "node_modules", "typescript", "bin", "tsc"),
		types: filepath.Join(pack, "node_modules", "@types")}, nil
})

// pyInstall is the python of a virtual environment with the client
// installed from its folder.
var pyInstall = sync.OnceValues(func() (string, error) {
	dir, err := installDir("py")
	if err != nil {
		return "", err
	}
	// A copy of the folder at the path the README names.
	kairos := filepath.Join(dir, "kairos", "clients")
	if err := os.MkdirAll(kairos, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(repoRoot(), "clients", "python"), kairos).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy clients/python: %v %s", err, out)
	}
	app := filepath.Join(dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		return "", err
	}
	env := []string{"PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1"}
	for _, line := range []string{pyVenvLine, strings.Replace(pyInstallLine, "/path/to/kairos", filepath.Join(dir, "kairos"), 1) + " --no-input"} {
		if _, err := runLine(env, app, line); err != nil {
			return "", err
		}
	}
	return filepath.Join(app, ".venv", "bin", "python"), nil
})

// TestClientInstalls installs each client as its documentation says, in
// a place of its own, and imports it: Go through a replace directive and
// go mod tidy, TypeScript as a packed tarball installed into a project,
// Python into a virtual environment from its folder (its build backend is
// in the folder: nothing comes from a package index). Each command is the
// one the documentation gives.
func TestClientInstalls(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lang, doc string
		tools     []string
		lines     []string
		check     func(t *testing.T) (string, error)
	}{
		{"go", "README.md", nil, []string{goInstallEdit, goInstallTidy}, func(t *testing.T) (string, error) {
			mod, err := goInstall()
			if err != nil {
				return "", err
			}
			return runLine(nil, mod, "go run .")
		}},
		{"typescript", "clients/typescript/README.md", []string{"node", "npm"}, []string{tsPackLine, tsInstallLine}, func(t *testing.T) (string, error) {
			ts, err := tsInstall()
			if err != nil {
				return "", err
			}
			return runLine(nil, ts.dir, `node -e 'import("@kairos-sh/client").then((m) => console.log("imported", typeof m.Kairos, typeof m.verifyCallback))'`)
		}},
		{"python", "clients/python/README.md", []string{"python3"}, []string{pyVenvLine, pyInstallLine}, func(t *testing.T) (string, error) {
			py, err := pyInstall()
			if err != nil {
				return "", err
			}
			return runLine(nil, os.TempDir(), py+` -c 'import kairos_client, importlib.metadata as m; print("imported", kairos_client.Kairos.__name__, m.version("kairos-client"))'`)
		}},
	} {
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			needTools(t, c.tools...)
			doc, err := os.ReadFile(filepath.Join(repoRoot(), c.doc))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range c.lines {
				if !strings.Contains(string(doc), l) {
					t.Errorf("%s does not say %q: the test runs that command", c.doc, l)
				}
			}
			out, err := c.check(t)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "imported") {
				t.Fatalf("the installed client did not import: %s", out)
			}
			t.Logf("%s", strings.TrimSpace(out))
		})
	}
}
