package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// `kairos migrate` says what it did, or why it did nothing, with the exit
// codes of the other commands (the migration itself: rdb's tests).
func TestMigrateCommand(t *testing.T) {
	ctx := context.Background()
	srv := testredis.New(t)
	c := redis.NewClient(srv.Options())
	defer c.Close()
	run := func(env map[string]string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runMain(ctx, []string{"migrate"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	env := map[string]string{"KAIROS_REDIS_URL": srv.URL(), "KAIROS_PREFIX": "mig"}
	for _, step := range []struct {
		name, layout string
		code         int
		say          string
	}{
		{"nothing stored", "", 0, `no kairos data under prefix "mig"`},
		{"this version's layout", strconv.Itoa(rdb.LayoutVersion), 0, "already"},
		{"an older layout it cannot migrate", "3", 1, "layout 3"},
	} {
		if step.layout != "" {
			c.HSet(ctx, "mig:meta", "layout", step.layout, "shards", 4)
		}
		code, out, errOut := run(env)
		if code != step.code || !strings.Contains(out+errOut, step.say) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d saying %q", step.name, code, out, errOut, step.code, step.say)
		}
	}
	if code, _, errOut := run(map[string]string{}); code == 0 || !strings.Contains(errOut, "KAIROS_REDIS_URL") {
		t.Errorf("without a Redis URL: exit %d, stderr %q; want a failure naming KAIROS_REDIS_URL", code, errOut)
	}
}
