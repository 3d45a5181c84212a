package server

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSentinelOptions: the URL's host and addr= parameters are Sentinels;
// user, password, database and TLS are the Redis's as in a plain URL; the
// Sentinels' credentials are sentinel_username and sentinel_password.
func TestSentinelOptions(t *testing.T) {
	type got struct {
		Sentinels                      []string
		Master, User, Password         string
		SentinelUser, SentinelPassword string
		DB, PoolSize                   int
		ClientName                     string
		TLS                            bool
		ServerName                     string
	}
	tests := []struct {
		name, url string
		want      got
		wantErr   string
	}{
		{name: "one sentinel", url: "redis://s1:26379",
			want: got{Sentinels: []string{"s1:26379"}}},
		{name: "three sentinels", url: "redis://s1:26379?addr=s2:26379&addr=s3:26380",
			want: got{Sentinels: []string{"s1:26379", "s2:26379", "s3:26380"}}},
		{name: "no port: Redis's", url: "redis://s1",
			want: got{Sentinels: []string{"s1:6379"}}},
		{name: "user and password are the Redis's", url: "redis://app:s3cret@s1:26379?addr=s2:26379",
			want: got{Sentinels: []string{"s1:26379", "s2:26379"}, User: "app", Password: "s3cret"}},
		{name: "password alone", url: "redis://:s3cret@s1:26379",
			want: got{Sentinels: []string{"s1:26379"}, Password: "s3cret"}},
		{name: "the sentinels' own credentials", url: "redis://:data@s1:26379?sentinel_password=watch&sentinel_username=sent",
			want: got{Sentinels: []string{"s1:26379"}, Password: "data", SentinelUser: "sent", SentinelPassword: "watch"}},
		{name: "database in the path", url: "redis://s1:26379/3",
			want: got{Sentinels: []string{"s1:26379"}, DB: 3}},
		{name: "database as a parameter", url: "redis://s1:26379?db=5",
			want: got{Sentinels: []string{"s1:26379"}, DB: 5}},
		{name: "pool and client name", url: "redis://s1:26379?pool_size=7&client_name=k",
			want: got{Sentinels: []string{"s1:26379"}, PoolSize: 7, ClientName: "k"}},
		{name: "TLS checks each host it dials", url: "rediss://s1:26379?addr=s2:26379",
			want: got{Sentinels: []string{"s1:26379", "s2:26379"}, TLS: true}},
		{name: "IPv6", url: "redis://[::1]:26379?addr=[::1]:26380",
			want: got{Sentinels: []string{"[::1]:26379", "[::1]:26380"}}},
		{name: "master_name", url: "redis://s1:26379?master_name=x", wantErr: "parameter master_name is not taken with KAIROS_REDIS_SENTINEL_MASTER: name the master with KAIROS_REDIS_SENTINEL_MASTER"},
		{name: "password as a parameter", url: "redis://s1:26379?password=x", wantErr: "parameter password is not taken"},
		{name: "replicas only", url: "redis://s1:26379?replica_only=true", wantErr: "kairos writes: it talks to the master only"},
		{name: "route by latency", url: "redis://s1:26379?route_by_latency=true", wantErr: "parameter route_by_latency"},
		{name: "unknown parameter", url: "redis://s1:26379?adr=s2:26379", wantErr: "unexpected option: adr"},
		{name: "bad addr", url: "redis://s1:26379?addr=s2", wantErr: "unable to parse addr param: s2"},
		{name: "bad database", url: "redis://s1:26379/x", wantErr: "invalid database number"},
		{name: "unix socket", url: "unix:///run/redis.sock", wantErr: "(want redis://[user:password@]sentinel1:26379"},
		{name: "no host", url: "redis://?addr=s2:26379", wantErr: "no Sentinel host"},
		{name: "bad URL keeps the password out", url: "redis://u:s3cret@s1:26379/%zz", wantErr: "invalid URL escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt, err := sentinelOptions(tt.url, "mymaster")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error holds the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := got{Sentinels: opt.SentinelAddrs, Master: opt.MasterName, User: opt.Username, Password: opt.Password,
				SentinelUser: opt.SentinelUsername, SentinelPassword: opt.SentinelPassword, DB: opt.DB, PoolSize: opt.PoolSize,
				ClientName: opt.ClientName, TLS: opt.TLSConfig != nil}
			if opt.TLSConfig != nil {
				g.ServerName = opt.TLSConfig.ServerName
			}
			tt.want.Master = "mymaster"
			if d := cmp.Diff(tt.want, g); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
		})
	}
}

// FuzzSentinelOptions: no panic; accepted options send every command to
// the named master (go-redis's failover client panics on routing options).
func FuzzSentinelOptions(f *testing.F) {
	for _, s := range []string{"redis://s1:26379?addr=s2:26379&addr=s3:26379", "rediss://u:p@s1/2?sentinel_password=x",
		"redis://s1?route_randomly=1", "redis://s1?db=x", "unix:///x", "redis://[::1]:1?addr=[::1]:2", "redis://s1?pool_size=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		opt, err := sentinelOptions(raw, "m")
		if err != nil {
			return
		}
		if opt.MasterName != "m" || opt.RouteByLatency || opt.RouteRandomly || opt.ReplicaOnly || len(opt.SentinelAddrs) == 0 {
			t.Errorf("sentinelOptions(%q) = %+v", raw, opt)
		}
		if opt.TLSConfig != nil && opt.TLSConfig.ServerName != "" {
			t.Errorf("sentinelOptions(%q): TLS names %q for every host", raw, opt.TLSConfig.ServerName)
		}
	})
}
