package rdb

import (
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"testing"
)

// TestScriptsNamedOnce checks that no two scripts share a name or a
// source, that EVALSHA runs the source the prelude and the script's files
// make, and that each function is named kairos_<12 hex digits>_<script>:
// tools that break Redis's time down by script (bench/, the slow log) read
// the script's name off the function's.
func TestScriptsNamedOnce(t *testing.T) {
	fnName := regexp.MustCompile(`^kairos_[0-9a-f]{12}_(.+)$`)
	names, hashes := map[string]bool{}, map[string]bool{}
	for _, s := range allScripts {
		if names[s.name] || hashes[s.eval.Hash()] {
			t.Errorf("script %q: its name or its source is another script's too", s.name)
		}
		names[s.name], hashes[s.eval.Hash()] = true, true
		if m := fnName.FindStringSubmatch(s.fn()); m == nil || m[1] != s.name {
			t.Errorf("script %q: function %q, want kairos_<12 hex digits>_%s", s.name, s.fn(), s.name)
		}
	}
	want := sha1.Sum([]byte(luaPrelude + jobSrc + indexSrc + schedSrc + opsSrc + flowSrc + claimSrc))
	if got := claimScript.eval.Hash(); got != hex.EncodeToString(want[:]) {
		t.Errorf("the claim script's SHA1 is %s, want that of the prelude and its files, %x", got, want)
	}
}
