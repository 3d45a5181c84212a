package callback

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// benchPayload is the body of the benchmarks' callbacks.
var benchPayload = []byte(`{"order":"ord_2kq8bXf3Yz1","action":"cancel","reason":"unpaid after 30 minutes"}`)

// benchReceiver is a receiver on loopback that answers 204, closed after b.
func benchReceiver(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// reportCPU reports the process's CPU since cpu0 per delivery.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/delivery")
}

// processCPU returns the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWorkerDeliver is the process side of firing callbacks: a
// Worker takes started jobs from its queue in a topic of concurrency 64
// and fires each, signed, at a receiver on loopback that answers 204, and
// records its outcome. The store is left out (its cost is Redis's, measured
// in internal/rdb); the receiver's own cost is in, as it is in the load
// tool's figures. It reports the process's CPU per delivery and, with
// -benchmem, the allocations of both sides:
//
//	go test -run '^$' -bench WorkerDeliver -benchmem -benchtime 20000x ./callback
func BenchmarkWorkerDeliver(b *testing.B) {
	srv := benchReceiver(b)
	q := newFakeStore(kairos.Topic{Tenant: "t", Name: "orders", Concurrency: 64, CallbackURL: srv.URL}.WithDefaults())
	var fed int
	if q.want = int64(b.N); q.want == 0 {
		return
	}
	w := NewWorker(q, WorkerConfig{AllowPrivate: true, Grace: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for fed < b.N {
		id := "job-" + strconv.Itoa(fed)
		q.push(kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: id}, UID: "u" + id, Attempts: 1, MaxAttempts: 3,
			Method: http.MethodPost, ContentType: "application/json", Payload: benchPayload, RunAt: time.Now()}, time.Now())
		fed++
	}
	select {
	case <-q.done:
	case <-time.After(time.Minute + time.Duration(b.N)*time.Millisecond):
		b.Fatalf("%d of %d outcomes recorded", len(q.outcomes()), b.N)
	}
	b.StopTimer()
	reportCPU(b, cpu0)
}

// BenchmarkHTTPFloor is BenchmarkWorkerDeliver's floor: the same POSTs,
// headers included, from 64 goroutines through a plain net/http client to
// the same receiver, with no worker, signature or outcome. What
// BenchmarkWorkerDeliver costs above it is kairos's own work a callback:
//
//	go test -run '^$' -bench 'WorkerDeliver|HTTPFloor' -benchmem -benchtime 40000x ./callback
func BenchmarkHTTPFloor(b *testing.B) {
	srv := benchReceiver(b)
	// the headers of a signed callback, as Worker.request makes them
	j := kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: "job-1"}, UID: "ujob-1", Attempts: 1,
		ContentType: "application/json", Payload: benchPayload, RunAt: time.Now()}
	signed, err := (&Worker{}).request(context.Background(), j, testSecret, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	h := signed.Header
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	jobs := make(chan struct{}, 1024)
	var wg sync.WaitGroup
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for range 64 {
		wg.Go(func() {
			for range jobs {
				req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(benchPayload))
				if err != nil {
					b.Error(err)
					return
				}
				req.Header = h.Clone()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	b.StopTimer()
	reportCPU(b, cpu0)
}
