package rdb

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Each script runs with EVALSHA and falls back to EVAL once per connection
// pool when Redis has not seen it yet. Every script touches keys of one slot.
var (
	//go:embed lua/index.lua
	indexSrc string // the listing index's helpers, put in front of the scripts that change it

	//go:embed lua/enqueue.lua
	enqueueSrc    string
	enqueueScript = redis.NewScript(indexSrc + enqueueSrc)

	//go:embed lua/cancel.lua
	cancelSrc    string
	cancelScript = redis.NewScript(indexSrc + cancelSrc)

	//go:embed lua/reschedule.lua
	rescheduleSrc    string
	rescheduleScript = redis.NewScript(rescheduleSrc)

	//go:embed lua/replay.lua
	replaySrc    string
	replayScript = redis.NewScript(replaySrc)

	//go:embed lua/claim.lua
	claimSrc    string
	claimScript = redis.NewScript(indexSrc + claimSrc)

	//go:embed lua/log.lua
	logSrc string // the attempt log's helpers, put in front of the scripts that write it

	//go:embed lua/start.lua
	startSrc    string
	startScript = redis.NewScript(logSrc + startSrc)

	//go:embed lua/unindex.lua
	unindexSrc    string
	unindexScript = redis.NewScript(indexSrc + unindexSrc)

	//go:embed lua/finish.lua
	finishSrc    string
	finishScript = redis.NewScript(logSrc + finishSrc)
)

// allScripts are every script, by name; Init loads them all.
var allScripts = []struct {
	name   string
	script *redis.Script
}{
	{"enqueue", enqueueScript}, {"cancel", cancelScript}, {"reschedule", rescheduleScript}, {"replay", replayScript},
	{"claim", claimScript}, {"start", startScript}, {"unindex", unindexScript}, {"finish", finishScript},
}

// ScriptNames maps the SHA1 by which EVALSHA names each of kairos's scripts
// to the script's name ("claim", "start", ...), so that a tool reading
// Redis's slow log can tell which script took the time. The map is new on
// every call.
func ScriptNames() map[string]string {
	out := make(map[string]string, len(allScripts))
	for _, s := range allScripts {
		out[s.script.Hash()] = s.name
	}
	return out
}
