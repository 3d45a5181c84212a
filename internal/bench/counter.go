package bench

import (
	"sync"
	"sync/atomic"
)

// Counter counts events by name, such as the Redis commands a kairos
// process sends. It is safe for concurrent use.
type Counter struct{ m sync.Map } // name -> *atomic.Int64

// Add counts one event of name.
func (c *Counter) Add(name string) {
	v, ok := c.m.Load(name)
	if !ok {
		v, _ = c.m.LoadOrStore(name, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() map[string]int64 {
	out := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}
