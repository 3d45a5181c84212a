package server

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// sentinelUsage is what a Sentinel URL looks like, for error messages.
const sentinelUsage = "want redis://[user:password@]sentinel1:26379[/db]?addr=sentinel2:26379&addr=sentinel3:26379" +
	"[&sentinel_password=...], or rediss://... for TLS"

// sentinelOptions reads KAIROS_REDIS_URL when KAIROS_REDIS_SENTINEL_MASTER
// names master: the URL's host and each addr= parameter is a Sentinel.
// The rest reads as in a plain URL: the user and password, the database
// (path or db=) and the scheme (rediss://: TLS) are the Redis's, the
// master's and its replicas'. The Sentinels' own credentials, if they
// have any, are the parameters sentinel_password and sentinel_username.
// Over TLS each connection checks the certificate against the host it
// dials (the Sentinel's, or the master's address as the Sentinels give
// it), not against the URL's first host. Errors never hold the URL.
func sentinelOptions(raw, master string) (*redis.FailoverOptions, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", urlErr(err), sentinelUsage)
	}
	q := u.Query()
	for name, why := range map[string]string{
		"master_name":      "name the master with KAIROS_REDIS_SENTINEL_MASTER (--redis-sentinel-master)",
		"username":         "put the Redis's user and password before the host, redis://user:password@sentinel1:26379",
		"password":         "put the Redis's user and password before the host, redis://user:password@sentinel1:26379; the Sentinels' password is sentinel_password",
		"replica_only":     "kairos writes: it talks to the master only",
		"route_by_latency": "kairos writes: it talks to the master only",
		"route_randomly":   "kairos writes: it talks to the master only",
	} {
		if q.Has(name) {
			return nil, fmt.Errorf("parameter %s is not taken with KAIROS_REDIS_SENTINEL_MASTER: %s", name, why)
		}
	}
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	u.User, u.RawQuery = nil, q.Encode()
	if u.Host == "" {
		return nil, errors.New("no Sentinel host in the URL (" + sentinelUsage + ")")
	}
	opt, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", urlErr(err), sentinelUsage)
	}
	opt.MasterName = master
	opt.Username, opt.Password = user, pass
	opt.SentinelUsername, opt.SentinelPassword = sentinelUser, sentinelPass
	if opt.TLSConfig != nil {
		// go-redis names the URL's first host for every connection; left
		// empty, each TLS dial checks the certificate of the host it dials.
		opt.TLSConfig.ServerName = ""
	}
	return opt, nil
}
