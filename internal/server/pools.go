package server

// redisPool is one of the two pools of connections a process keeps to
// Redis (per node on a cluster). Its size is an upper bound reached only
// under load. Connections open on demand (MinIdleConns stays 0, so a cold
// start dials only what it uses), and one handed back while maxIdle others
// sit idle is closed, so an idle process keeps few open.
type redisPool struct {
	name    string // after the client name, so CLIENT LIST tells the pools apart
	size    int
	maxIdle int
	fromURL bool // pool_size and max_idle_conns in KAIROS_REDIS_URL win
}

var (
	// mainPool serves API calls, claims and callback outcomes at once;
	// go-redis's default size (10 per CPU) left callers waiting for a
	// connection under load. Pub/sub and go-redis's own pool for
	// pipelines come on top (docs/operations.md, "Redis connections").
	mainPool = redisPool{name: "main", size: 128, maxIdle: 3, fromURL: true}
	// blockingPool is for blocking pops: a blocked consumer holds its
	// connection, so consumers get a pool of their own and can never take
	// the connections API calls need.
	blockingPool = redisPool{name: "blocking", size: 4096, maxIdle: 2}
)

// set applies p to the fields that redis.Options and redis.ClusterOptions
// share, as the URL filled them: the client name (the URL's client_name,
// default "kairos") gets the pool's name after a colon.
func (p redisPool) set(clientName *string, size, maxIdle *int) {
	if *clientName == "" {
		*clientName = "kairos"
	}
	*clientName += ":" + p.name
	if !p.fromURL || *size == 0 {
		*size = p.size
	}
	if !p.fromURL || *maxIdle == 0 {
		*maxIdle = p.maxIdle
	}
}
