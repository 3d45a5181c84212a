package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestCallbacksThroughProxyToPrivateCA runs `kairos serve` with
// KAIROS_CALLBACK_PROXY and KAIROS_CALLBACK_CA: every callback to a TLS
// receiver on a test CA goes through the proxy's CONNECT tunnels and
// arrives; a process without the CA reaches the proxy but not the receiver.
func TestCallbacksThroughProxyToPrivateCA(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tunnels []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		tunnels = append(tunnels, r.Host)
		mu.Unlock()
		up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(proxy.Close)

	run := func(name string, env ...string) (prefix string, enqueue func(id string)) {
		prefix = testredis.Prefix(t) + name
		store := procStore(t, prefix)
		putTopic(t, store, "t", rcv.URL+"/hook", 2*time.Second)
		p := startKairos(t, name, prefix, env...)
		p.WaitLog(t, "consuming topic", 10*time.Second)
		return prefix, func(id string) {
			if _, err := store.Enqueue(context.Background(), kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: id}, RunAt: store.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, enqueue := run("withca", "KAIROS_CALLBACK_PROXY="+proxy.URL, "KAIROS_CALLBACK_CA="+ca)
	const n = 5
	for i := range n {
		enqueue(fmt.Sprintf("j%d", i))
	}
	testwait.UntilNil(t, 15*time.Second, func() error {
		if got.Load() < n {
			return fmt.Errorf("%d of %d", got.Load(), n)
		}
		return nil
	}, "the receiver's callbacks")
	host := strings.TrimPrefix(rcv.URL, "https://")
	mu.Lock()
	for _, h := range tunnels {
		if h != host {
			t.Errorf("the proxy tunnelled to %s, want only %s", h, host)
		}
	}
	if len(tunnels) == 0 {
		t.Error("the proxy saw no tunnel: the callbacks went around it")
	}
	before := len(tunnels)
	mu.Unlock()

	// Without the CA the tunnel opens but TLS to the receiver fails.
	noca, enqueue := run("noca", "KAIROS_CALLBACK_PROXY="+proxy.URL)
	enqueue("x")
	// its attempt ends (retrying) once its TLS handshake failed
	nocaStore := procStore(t, noca)
	testwait.UntilNil(t, 10*time.Second, func() error {
		j, err := nocaStore.GetJob(context.Background(), kairos.JobKey{Tenant: "acme", Topic: "t", ID: "x"})
		if err != nil {
			return err
		}
		if j.State != kairos.StateRetrying {
			return fmt.Errorf("job x is %s, want retrying", j.State)
		}
		return nil
	}, "the attempt without the CA to fail")
	if got.Load() != n {
		t.Errorf("without KAIROS_CALLBACK_CA the receiver got %d callbacks, want none more than %d", got.Load(), n)
	}
	mu.Lock()
	if len(tunnels) == before {
		t.Error("without KAIROS_CALLBACK_CA the proxy saw no attempt")
	}
	mu.Unlock()
}
