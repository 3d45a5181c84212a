package rdb

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
)

// TestScriptNames checks that every script is named once, by the SHA1 of
// the source EVALSHA runs.
func TestScriptNames(t *testing.T) {
	names := ScriptNames()
	if len(names) != 2*len(allScripts) {
		t.Fatalf("%d names for %d scripts: two scripts share a source", len(names), len(allScripts))
	}
	seen := map[string]bool{}
	for _, s := range allScripts {
		if names[s.eval.Hash()] != s.name || names[s.fn()] != s.name || seen[s.name] {
			t.Errorf("script %q: named %q / %q, or named twice", s.name, names[s.eval.Hash()], names[s.fn()])
		}
		seen[s.name] = true
	}
	want := sha1.Sum([]byte(luaPrelude + jobSrc + indexSrc + schedSrc + claimSrc))
	if got := names[hex.EncodeToString(want[:])]; got != "claim" {
		t.Errorf("SHA1 of the claim script's source names %q, want claim", got)
	}
}
