// Command receiver is a minimal kairos callback receiver: it checks both
// signatures of each callback with verify.Request, over the raw body, and
// answers 204, or 401 when they do not hold. Package
// github.com/kairos-sh/kairos/verify imports only the standard library and
// golang-jwt, so this receiver pulls in nothing of the server.
//
//	KAIROS_SECRET_CURRENT=whsec_... go run ./examples/receivers/go --port 9000
//
// The secrets come from the environment only (KAIROS_SECRET_CURRENT and,
// during a rotation, KAIROS_SECRET_NEXT: GET /v1/signing-keys shows both), so
// they never show in the process list. The port comes from --port or PORT
// (default 9000; 0 picks a free one). It listens on 127.0.0.1 only and
// prints one line per accepted callback.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos/verify"
)

func main() {
	port := flag.Int("port", envPort(), "port to listen on, on 127.0.0.1 (env PORT)")
	flag.Parse()
	var secrets []string
	for _, name := range []string{"KAIROS_SECRET_CURRENT", "KAIROS_SECRET_NEXT"} {
		if s := os.Getenv(name); s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		log.Fatal("set KAIROS_SECRET_CURRENT to the tenant's signing secret (whsec_..., from GET /v1/signing-keys)")
	}

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The body exactly as it arrived: the signatures cover these bytes.
		body, err := verify.Request(r, secrets, verify.Options{})
		if err != nil {
			log.Printf("rejected: %v", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// webhook-id stays the same across retries of a job: deduplicate on it.
		fmt.Printf("accepted webhook-id=%s job=%s attempt=%s bytes=%d\n",
			r.Header.Get("webhook-id"), r.Header.Get("Kairos-Job-Id"), r.Header.Get("Kairos-Attempt"), len(body))
		w.WriteHeader(http.StatusNoContent)
	})

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// envPort returns PORT, or 9000 when it is unset or not a number.
func envPort() int {
	if p, err := strconv.Atoi(os.Getenv("PORT")); err == nil {
		return p
	}
	return 9000
}
