package rdb

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestFlowArgsNamed checks that the Go side of flowpace.lua and
// flowgate.lua sends the arguments each script's header names, in its
// order: the fields of paceArgs and gateArgs are the names the script
// reads ARGV into (local arg = {...}), and the jobs' arguments start
// where the script's JOBS says.
func TestFlowArgsNamed(t *testing.T) {
	field := regexp.MustCompile(`^\s*(\w+) = .*\bARGV\[(\d+)\]`)
	jobs := regexp.MustCompile(`(?m)^local JOBS, PER_JOB = (\d+), (\d+)$`)
	for _, tc := range []struct {
		script string
		src    string
		args   any
		argv   int
		perJob int
	}{
		{"flowpace", flowpaceSrc, paceArgs{}, len(paceArgs{}.argv(0)), 3},
		{"flowgate", flowgateSrc, gateArgs{}, len(gateArgs{}.argv(0)), 2},
	} {
		t.Run(tc.script, func(t *testing.T) {
			_, block, ok := strings.Cut(tc.src, "\nlocal arg = {\n")
			block, _, ok2 := strings.Cut(block, "\n}\n")
			if !ok || !ok2 {
				t.Fatal("no `local arg = {...}` block")
			}
			var names []string
			for n, line := range strings.Split(block, "\n") {
				m := field.FindStringSubmatch(line)
				if m == nil || m[2] != strconv.Itoa(n+1) {
					t.Fatalf("line %q of arg: want `name = ... ARGV[%d] ...`", line, n+1)
				}
				names = append(names, m[1])
			}
			var fields []string
			rt := reflect.TypeOf(tc.args)
			for i := range rt.NumField() {
				f := []rune(rt.Field(i).Name)
				f[0] = unicode.ToLower(f[0])
				fields = append(fields, string(f))
			}
			if !reflect.DeepEqual(names, fields) {
				t.Errorf("the script reads ARGV as %v; the Go side sends %v", names, fields)
			}
			if tc.argv != len(fields) {
				t.Errorf("argv sends %d arguments before the jobs, want %d", tc.argv, len(fields))
			}
			m := jobs.FindStringSubmatch(tc.src)
			if m == nil || m[1] != strconv.Itoa(len(fields)+1) || m[2] != strconv.Itoa(tc.perJob) {
				t.Errorf("the script's jobs start at %v, want `local JOBS, PER_JOB = %d, %d`", m, len(fields)+1, tc.perJob)
			}
		})
	}
}
