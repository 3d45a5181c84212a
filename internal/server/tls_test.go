package server

import (
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestServeOverTLSWithCustomCA runs kairos on a redis-server that speaks
// only TLS, verifying its certificate against KAIROS_REDIS_CA: a job is
// created and fired to a loopback receiver. Then the same over a Redis
// Cluster whose nodes speak only TLS.
func TestServeOverTLSWithCustomCA(t *testing.T) {
	skipShort(t)
	t.Run("single", func(t *testing.T) {
		srv := testredis.NewTLS(t)
		createAndFire(t, startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": srv.URL(), "KAIROS_REDIS_CA": srv.CAFile}))
	})
	t.Run("cluster", func(t *testing.T) {
		c, err := testredis.StartTLSCluster(t.TempDir(), 3)
		if errors.Is(err, testredis.ErrNoTLS) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		createAndFire(t, startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": c.URL(), "KAIROS_REDIS_CLUSTER": "1", "KAIROS_REDIS_CA": c.CAFile}))
	})
}

func createAndFire(t *testing.T, ti *testInstance) {
	t.Helper()
	ti.call(t, "PUT", "/v1/topics/tls", `{"callback_url": "`+ti.rcvURL+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/tls/jobs", `{"delay": "100ms", "payload": {"over": "tls"}}`, http.StatusCreated)
	waitHits(t, ti.hits, 1, 20*time.Second)
}

// TestBadRedisCertificateRefusedAtStart: kairos does not start when the
// TLS Redis's certificate fails verification, and says at once (not after
// its 30 s wait for Redis) what was wrong and what to check, without the
// URL's password.
func TestBadRedisCertificateRefusedAtStart(t *testing.T) {
	good := testredis.NewTLS(t)
	otherCA, err := testredis.MakeCerts(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	wrongHost := testredis.NewTLS(t, "redis.example.internal")
	plain := plainTextServer(t)
	const password = "s3cret-pw"
	withPassword := func(u string) string { return strings.Replace(u, "://", "://default:"+password+"@", 1) }
	tests := []struct {
		name  string
		env   map[string]string
		wants []string
	}{
		{name: "wrong CA", env: map[string]string{"KAIROS_REDIS_URL": withPassword(good.URL()), "KAIROS_REDIS_CA": otherCA.CAFile},
			wants: []string{"TLS to Redis: the server's certificate is not signed by the CA in KAIROS_REDIS_CA (" + otherCA.CAFile + ")",
				"x509: certificate signed by unknown authority", "check KAIROS_REDIS_CA or the URL's host (127.0.0.1:"}},
		{name: "wrong host", env: map[string]string{"KAIROS_REDIS_URL": withPassword(wrongHost.URL()), "KAIROS_REDIS_CA": wrongHost.CAFile},
			wants: []string{`TLS to Redis: the server's certificate is not valid for "127.0.0.1", the host in KAIROS_REDIS_URL`,
				"use a host name the certificate names (redis.example.internal)"}},
		{name: "system roots", env: map[string]string{"KAIROS_REDIS_URL": withPassword(good.URL())},
			wants: []string{"TLS to Redis: the server's certificate is not signed by a CA this system trusts", "set KAIROS_REDIS_CA"}},
		{name: "server without TLS", env: map[string]string{"KAIROS_REDIS_URL": withPassword("rediss://" + plain)},
			wants: []string{"TLS to Redis: the server at 127.0.0.1:", "does not speak TLS", "use redis:// for it"}},
		{name: "CA file missing", env: map[string]string{"KAIROS_REDIS_URL": good.URL(), "KAIROS_REDIS_CA": "/nonexistent/ca.pem"},
			wants: []string{"KAIROS_REDIS_CA: open /nonexistent/ca.pem: no such file or directory"}},
		{name: "CA file without a certificate", env: map[string]string{"KAIROS_REDIS_URL": good.URL(), "KAIROS_REDIS_CA": otherCA.KeyFile},
			wants: []string{"KAIROS_REDIS_CA (" + otherCA.KeyFile + "): no PEM certificate in the file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			in, err := startWith(tt.env)
			if err == nil {
				in.Stop()
				t.Fatal("kairos started")
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("refused after %v: a bad certificate must be reported at once, not waited out", took)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error shows the URL's password:\n%v", err)
			}
		})
	}
}

// plainTextServer answers every connection with a Redis error in plain
// text, as a server without TLS may, and returns its address.
func plainTextServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("-ERR unknown command\r\n"))
			c.Close()
		}
	}()
	return ln.Addr().String()
}
