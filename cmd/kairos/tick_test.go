package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTickRefusesTheEmbeddedRedis: without KAIROS_REDIS_URL a tick would
// run on a fresh, empty embedded Redis and report nothing done; it refuses,
// naming the setting.
func TestTickRefusesTheEmbeddedRedis(t *testing.T) {
	var out strings.Builder
	err := tick(context.Background(), []string{"--for", "1s"}, func(string) string { return "" }, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "KAIROS_REDIS_URL") {
		t.Fatalf("tick without KAIROS_REDIS_URL: %v (printed %q), want a refusal naming KAIROS_REDIS_URL", err, out.String())
	}
	if out.Len() != 0 {
		t.Errorf("a refused tick printed a summary: %q", out.String())
	}
}

func TestTickForFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want time.Duration
		rest []string
		bad  bool
	}{
		{name: "default", args: []string{"--prefix", "p"}, want: 55 * time.Second, rest: []string{"--prefix", "p"}},
		{name: "separate", args: []string{"--for", "3s", "--shards", "4"}, want: 3 * time.Second, rest: []string{"--shards", "4"}},
		{name: "equals", args: []string{"--shards=4", "-for=90s"}, want: 90 * time.Second, rest: []string{"--shards=4"}},
		{name: "missing value", args: []string{"--for"}, bad: true},
		{name: "not a duration", args: []string{"--for", "soon"}, bad: true},
		{name: "zero", args: []string{"--for=0s"}, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, rest, err := tickFor(c.args)
			if c.bad {
				if err == nil {
					t.Fatalf("tickFor(%q) = %v, want a usage error", c.args, d)
				}
				return
			}
			if err != nil || d != c.want || !slices.Equal(rest, c.rest) {
				t.Fatalf("tickFor(%q) = %v, %q, %v; want %v, %q", c.args, d, rest, err, c.want, c.rest)
			}
		})
	}
}
