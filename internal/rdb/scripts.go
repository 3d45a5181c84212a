package rdb

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Each script is the prelude layout.go generates, the shared helpers, then
// the script itself. It runs with EVALSHA and falls back to EVAL when
// Redis has not seen it yet. Every script touches keys of one slot.
var (
	//go:embed lua/job.lua
	jobSrc string // records, the timing wheel, counters and the clock
	//go:embed lua/index.lua
	indexSrc string // the listing index

	//go:embed lua/enqueue.lua
	enqueueSrc string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/finish.lua
	finishSrc string
	//go:embed lua/cancel.lua
	cancelSrc string
	//go:embed lua/reschedule.lua
	rescheduleSrc string
	//go:embed lua/replay.lua
	replaySrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/unindex.lua
	unindexSrc string
	//go:embed lua/handle.lua
	handleSrc string
	//go:embed lua/undead.lua
	undeadSrc string

	enqueueScript    = newScript(enqueueSrc)
	claimScript      = newScript(claimSrc)
	finishScript     = newScript(finishSrc)
	cancelScript     = newScript(cancelSrc)
	rescheduleScript = newScript(rescheduleSrc)
	replayScript     = newScript(replaySrc)
	releaseScript    = newScript(releaseSrc)
	unindexScript    = newScript(unindexSrc)
	handleScript     = newScript(handleSrc)
	undeadScript     = newScript(undeadSrc)
)

func newScript(src string) *redis.Script {
	return redis.NewScript(luaPrelude + jobSrc + indexSrc + src)
}

// allScripts are the scripts with their names (Init loads them).
var allScripts = []struct {
	name   string
	script *redis.Script
}{
	{"enqueue", enqueueScript}, {"claim", claimScript}, {"finish", finishScript}, {"cancel", cancelScript},
	{"reschedule", rescheduleScript}, {"replay", replayScript}, {"release", releaseScript},
	{"unindex", unindexScript}, {"handle", handleScript}, {"undead", undeadScript},
}

// ScriptNames maps each script's SHA1 to its name, for tools that break
// Redis's time down by script (EVALSHA calls name the SHA1).
func ScriptNames() map[string]string {
	out := make(map[string]string, len(allScripts))
	for _, s := range allScripts {
		out[s.script.Hash()] = s.name
	}
	return out
}
