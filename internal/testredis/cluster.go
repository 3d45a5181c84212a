package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of redis-server child processes on
// loopback ports: masters with one replica each.
type Cluster struct {
	Nodes  []*Server
	CAFile string // for a TLS cluster: the CA that signed every node's certificate
}

// StartCluster starts 2*masters nodes in dir, joins them with
// `redis-cli --cluster create --cluster-replicas 1` and waits until every
// node reports cluster_state:ok. extra is appended to every node's arguments.
func StartCluster(dir string, masters int, extra ...string) (*Cluster, error) {
	return startCluster(dir, masters, nil, func(ndir string, args []string) (*Server, error) { return Start(ndir, args...) })
}

// StartTLSCluster is StartCluster with nodes that speak only TLS, to
// clients and to each other, with certificates for 127.0.0.1 and localhost
// signed by one CA made for the cluster (Cluster.CAFile). A redis-server
// without TLS support gives an error wrapping ErrNoTLS.
func StartTLSCluster(dir string, masters int, extra ...string) (*Cluster, error) {
	certs, err := MakeCerts(dir, "127.0.0.1", "localhost")
	if err != nil {
		return nil, fmt.Errorf("make test certificates: %w", err)
	}
	extra = append([]string{"--tls-cluster", "yes", "--tls-replication", "yes"}, extra...)
	c, err := startCluster(dir, masters, []string{"--tls", "--cacert", certs.CAFile},
		func(ndir string, args []string) (*Server, error) { return startTLS(ndir, certs, args...) }, extra...)
	if err != nil {
		return nil, err
	}
	c.CAFile = certs.CAFile
	return c, nil
}

// startCluster starts the nodes with startNode, then joins them with
// redis-cli (given cliArgs first).
func startCluster(dir string, masters int, cliArgs []string, startNode func(dir string, args []string) (*Server, error), extra ...string) (*Cluster, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not found on PATH: run `make test`, which installs redis-tools")
	}
	c := &Cluster{}
	for i := range 2 * masters {
		ndir := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := mkdir(ndir); err != nil {
			return nil, err
		}
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(ndir, "nodes.conf"),
			"--cluster-node-timeout", "2000"}, extra...)
		s, err := startNode(ndir, args)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append(cliArgs, "--cluster", "create")
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// WaitOK waits until every live node says cluster_state:ok and every
// replication link is up (a master's replica online, a replica's link to
// its master up): until then a WAIT for one replica answers 0.
func (c *Cluster) WaitOK(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, n := range c.Nodes {
			if !n.Alive() {
				continue
			}
			opt := n.Options()
			opt.MaxRetries = -1
			cl := redis.NewClient(opt)
			info, err := cl.ClusterInfo(context.Background()).Result()
			repl, rerr := cl.Info(context.Background(), "replication").Result()
			cl.Close()
			if err != nil || rerr != nil || !strings.Contains(info, "cluster_state:ok") || !replicationUp(repl) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis cluster not ok within %v", within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// URL returns the cluster in the form KAIROS_REDIS_URL takes with
// KAIROS_REDIS_CLUSTER=1: redis://first?addr=second&addr=... (rediss://
// for a TLS cluster).
func (c *Cluster) URL() string {
	u := c.Nodes[0].URL()
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// Client returns a cluster client over every node.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), TLSConfig: c.Nodes[0].Options().TLSConfig})
}

// Master returns the node serving key's slot as master.
func (c *Cluster) Master(ctx context.Context, key string) (*Server, error) {
	cl := c.Client()
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	m, err := cl.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("no master for slot %d: %w", slot, err)
	}
	for _, n := range c.Nodes {
		if n.Addr == m.Options().Addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("master %s of slot %d is not a node of this cluster", m.Options().Addr, slot)
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// replicationUp reads INFO replication: a master needs an online replica,
// a replica an up link to its master.
func replicationUp(info string) bool {
	if strings.Contains(info, "role:slave") {
		return strings.Contains(info, "master_link_status:up")
	}
	return strings.Contains(info, "state=online")
}
