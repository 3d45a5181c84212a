package kairos

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README is for a newcomer: reference and figures live in docs/.
const maxReadmeLines = 300

// docPages are the pages the README and error messages send readers to.
var docPages = []string{"configuration", "api", "schedules", "flow-control", "callbacks", "operations", "architecture", "performance"}

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; keep it at most %d and move reference and figures to docs/", n, maxReadmeLines)
	}
}

// TestUpgradingHeading holds docs/operations.md to the "Upgrading" heading
// that the data layout's error messages link to (docs/operations.md#upgrading).
func TestUpgradingHeading(t *testing.T) {
	anchors, err := headingAnchors("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !anchors["upgrading"] {
		t.Error(`docs/operations.md has no "Upgrading" heading; the layout errors of internal/rdb link to docs/operations.md#upgrading`)
	}
}

// TestDocLinks checks that every relative link in README.md and docs/*.md
// points at a file that exists and, with a #fragment, at a heading (or an
// explicit anchor) of that file.
func TestDocLinks(t *testing.T) {
	files := []string{"README.md"}
	for _, p := range docPages {
		files = append(files, filepath.Join("docs", p+".md"))
	}
	more, _ := filepath.Glob("docs/*.md")
	for _, f := range more {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	for _, file := range files {
		links, err := relativeLinks(file)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, l := range links {
			target, frag, _ := strings.Cut(l, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", file, l)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s links to %s: a fragment on a file that is not markdown", file, l)
				continue
			}
			anchors, err := headingAnchors(path)
			if err != nil {
				t.Error(err)
				continue
			}
			if !anchors[frag] {
				t.Errorf("%s links to %s, but %s has no heading with anchor #%s", file, l, path, frag)
			}
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Upgrading":                        "upgrading",
		"Scale: ten million pending":       "scale-ten-million-pending",
		"Downtime: `catch_up`":             "downtime-catch_up",
		"Traces (OpenTelemetry)":           "traces-opentelemetry",
		"fly.io":                           "flyio",
		"Pause, resume, delete, replace":   "pause-resume-delete-replace",
		"Tick mode: kairos without a proc": "tick-mode-kairos-without-a-proc",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`[^`]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// relativeLinks returns the targets of the markdown links of file that
// point into this repository (not http(s) or mailto), outside code.
func relativeLinks(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			l := m[1]
			if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
				continue
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// headingAnchors returns the anchors GitHub gives the headings of file
// (a repeated heading gets -1, -2, ...), plus explicit <a id> anchors.
func headingAnchors(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			anchors[s+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors, nil
}

// slug is GitHub's heading anchor: lower case, letters, digits, '-' and
// '_' kept, spaces made '-', everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
