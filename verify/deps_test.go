package verify_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStdlibAndJWT keeps verify light for receivers: besides the
// standard library it may import github.com/golang-jwt/jwt/v5 and nothing
// else (no Redis client, no tracing, not the rest of kairos).
func TestImportsOnlyStdlibAndJWT(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{
		"github.com/kairos-sh/kairos/verify": true,
		"github.com/golang-jwt/jwt/v5":       true,
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("verify imports %s; it may import only the standard library and github.com/golang-jwt/jwt/v5", p)
		}
	}
}
