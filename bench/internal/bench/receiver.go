package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Receiver is the bench's callback target: a plain net/http server on
// loopback that notes when each job of the current run arrives. It answers
// 204 at once and does no verification, so that it costs little next to
// the kairos under test.
type Receiver struct {
	URL   string // the callback URL: http://127.0.0.1:port/cb
	ln    net.Listener
	srv   *http.Server
	cur   atomic.Pointer[Arrivals]
	stray atomic.Int64 // hits that belong to no job of the current run
	done  chan struct{}
	// hold, when set (ns), is how long each request is held before its
	// answer (a slow receiver); inFlight and mostInFlight count requests.
	hold, inFlight, mostInFlight atomic.Int64
}

// SetHold makes every request wait d before its answer (0: none), and
// resets the count of requests in flight at once.
func (r *Receiver) SetHold(d time.Duration) {
	r.hold.Store(int64(d))
	r.mostInFlight.Store(0)
}

// MostInFlight is the most requests in flight at once since SetHold.
func (r *Receiver) MostInFlight() int64 { return r.mostInFlight.Load() }

// StartReceiver listens on a free loopback port and serves until Close.
func StartReceiver() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/cb", ln: ln, done: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() { defer close(r.done); r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the server and waits for it.
func (r *Receiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	<-r.done
	return err
}

// Stray returns how many hits so far belonged to no job of the run that
// was current when they arrived.
func (r *Receiver) Stray() int64 { return r.stray.Load() }

// Expect makes run id, of n jobs numbered 0..n-1, the current run.
func (r *Receiver) Expect(id string, n int) *Arrivals {
	run := &Arrivals{ID: id, n: n, first: make([]atomic.Int64, n), due: make([]atomic.Int64, n), count: make([]atomic.Int32, n)}
	r.cur.Store(run)
	return run
}

// Beyond is the number a slot mapping gives an occurrence past the ones a
// run expects (the next instant its last ones filed): counted apart
// (Arrivals.Beyond), neither measured nor stray.
const Beyond = -1

// ExpectOccurrences makes run id the current run: the occurrences of
// recurring schedules, n in all. Each schedule's payload carries its
// number; slot maps that and the occurrence's job id ("<schedule
// id>@<unix ms>") to the occurrence's number in 0..n-1 and its instant,
// unix ms, or Beyond, and refuses an occurrence the run does not expect.
func (r *Receiver) ExpectOccurrences(id string, n int, slot func(schedule int, jobID string) (seq int, dueMS int64, ok bool)) *Arrivals {
	run := r.Expect(id, n)
	run.slot = slot
	return run
}

// ServeHTTP records one callback. Arrival is the moment the handler runs.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now().UnixNano()
	var buf [256]byte
	n, err := io.ReadFull(req.Body, buf[:])
	if err == nil {
		io.Copy(io.Discard, req.Body)
	}
	run, seq, due, ok := parsePayload(buf[:n])
	cur := r.cur.Load()
	beyond := false
	if ok && cur != nil && cur.slot != nil && string(run) == cur.ID {
		// an occurrence: its instant is in its job id, not in the payload
		seq, due, ok = cur.slot(seq, req.Header.Get("Kairos-Job-Id"))
		beyond = ok && seq == Beyond
	}
	switch {
	case beyond:
		cur.beyond.Add(1)
	case !ok || cur == nil || string(run) != cur.ID || seq < 0 || seq >= cur.n:
		r.stray.Add(1)
	default:
		cur.record(seq, at, due)
	}
	if d := r.hold.Load(); d > 0 {
		storeMax(&r.mostInFlight, r.inFlight.Add(1))
		time.Sleep(time.Duration(d))
		r.inFlight.Add(-1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Arrivals tracks the deliveries of one scenario run.
type Arrivals struct {
	ID      string
	n       int
	slot    func(schedule int, jobID string) (int, int64, bool) // set for occurrences of schedules
	first   []atomic.Int64                                      // arrival of each job's first delivery, unix ns on the local clock; 0: none
	due     []atomic.Int64                                      // each job's due time from its payload, unix ms on the Redis clock
	count   []atomic.Int32                                      // deliveries per job
	arrived atomic.Int64                                        // jobs delivered at least once
	hits    atomic.Int64                                        // deliveries in all
	last    atomic.Int64                                        // latest arrival, unix ns
	beyond  atomic.Int64                                        // occurrences past the expected ones (Beyond)
}

// Beyond returns how many occurrences past the expected ones arrived.
func (r *Arrivals) Beyond() int { return int(r.beyond.Load()) }

func (r *Arrivals) record(seq int, at, dueMS int64) {
	r.hits.Add(1)
	if r.count[seq].Add(1) == 1 {
		r.due[seq].Store(dueMS)
		r.first[seq].Store(at)
		r.arrived.Add(1)
	}
	storeMax(&r.last, at)
}

// storeMax raises v to x unless it is already at least x.
func storeMax(v *atomic.Int64, x int64) {
	for {
		l := v.Load()
		if x <= l || v.CompareAndSwap(l, x) {
			return
		}
	}
}

// Arrived returns how many jobs were delivered at least once.
func (r *Arrivals) Arrived() int { return int(r.arrived.Load()) }

// Last returns the latest arrival (zero before any).
func (r *Arrivals) Last() time.Time {
	if l := r.last.Load(); l != 0 {
		return time.Unix(0, l)
	}
	return time.Time{}
}

// Delivery sums up a run's deliveries. Lateness is arrival minus due time.
type Delivery struct {
	Jobs       int `json:"jobs"`
	Delivered  int `json:"delivered"`  // distinct jobs that arrived
	Missing    int `json:"missing"`    // jobs that never arrived
	Duplicated int `json:"duplicated"` // jobs that arrived more than once
	// Beyond counts occurrences past the expected ones (the next instant
	// the last ones filed) that arrived: neither missing nor stray.
	Beyond int     `json:"beyond,omitempty"`
	Early  int     `json:"early"` // jobs that arrived before their due time
	Stray  int64   `json:"stray"` // hits of no job of this run
	MinMS  float64 `json:"lateness_min_ms"`
	P50MS  float64 `json:"lateness_p50_ms"`
	P90MS  float64 `json:"lateness_p90_ms"`
	P99MS  float64 `json:"lateness_p99_ms"`
	MaxMS  float64 `json:"lateness_max_ms"`
	// FirstMS and LastMS are the first and the last arrival after the
	// earliest due time of the run.
	FirstMS float64 `json:"first_arrival_ms"`
	LastMS  float64 `json:"last_arrival_ms"`
	// Slices are the p50 and max lateness of the jobs due in each tenth of
	// the span of due times, earliest first: a clock offset shows as a shift
	// of whole slices, a stall as one bad slice.
	Slices []Slice `json:"slices,omitempty"`
}

// Slice is the lateness of the jobs due in one part of a run's span.
type Slice struct {
	Jobs  int     `json:"jobs"`
	P50MS float64 `json:"p50_ms"`
	MaxMS float64 `json:"max_ms"`
}

// Delivery computes the figures; offset is the Redis clock minus the local
// clock, so that arrivals and due times are compared on one clock.
func (r *Arrivals) Delivery(offset time.Duration, stray int64) Delivery {
	d := Delivery{Jobs: r.n, Stray: stray, Beyond: r.Beyond()}
	late := make([]int64, 0, r.n)
	var minDue, maxDue, first, last int64
	dues := make([]int64, 0, r.n)
	for i := range r.n {
		due := r.due[i].Load() * int64(time.Millisecond)
		c := r.count[i].Load()
		if c == 0 {
			d.Missing++
			continue
		}
		if c > 1 {
			d.Duplicated++
		}
		at := r.first[i].Load() + int64(offset)
		l := at - due
		if l < 0 {
			d.Early++
		}
		late = append(late, l)
		dues = append(dues, due)
		if minDue == 0 || due < minDue {
			minDue = due
		}
		maxDue = max(maxDue, due)
		if first == 0 || at < first {
			first = at
		}
		last = max(last, at)
	}
	d.Delivered = len(late)
	if len(late) == 0 {
		return d
	}
	if span := maxDue - minDue; span > 0 {
		const n = 10
		parts := make([][]int64, n)
		for i, due := range dues {
			k := min(int((due-minDue)*n/span), n-1)
			parts[k] = append(parts[k], late[i])
		}
		for _, p := range parts {
			sl := Slice{Jobs: len(p)}
			if len(p) > 0 {
				q := quantiles(p, 0.5, 1)
				sl.P50MS, sl.MaxMS = nsToMS(q[0]), nsToMS(q[1])
			}
			d.Slices = append(d.Slices, sl)
		}
	}
	q := quantiles(late, 0, 0.5, 0.9, 0.99, 1)
	d.MinMS, d.P50MS, d.P90MS, d.P99MS, d.MaxMS = nsToMS(q[0]), nsToMS(q[1]), nsToMS(q[2]), nsToMS(q[3]), nsToMS(q[4])
	d.FirstMS, d.LastMS = nsToMS(first-minDue), nsToMS(last-minDue)
	return d
}

// appendPayload writes a job's callback body: its run, its number and its
// due time (unix ms on the Redis clock), padded to 60 bytes.
func appendPayload(b []byte, run string, seq int, dueMS int64) []byte {
	const size = 60
	start := len(b)
	b = append(b, `{"run":"`...)
	b = append(b, run...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"due":`...)
	b = strconv.AppendInt(b, dueMS, 10)
	if pad := size - (len(b) - start) - len(`,"pad":""}`); pad >= 0 {
		b = append(b, `,"pad":"`...)
		for range pad {
			b = append(b, '.')
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

var errPayload = errors.New("not a bench payload")

// parsePayload reads what appendPayload wrote.
func parsePayload(p []byte) (run []byte, seq int, dueMS int64, ok bool) {
	field := func(name string) ([]byte, error) {
		i := bytes.Index(p, []byte(name))
		if i < 0 {
			return nil, errPayload
		}
		rest := p[i+len(name):]
		j := bytes.IndexAny(rest, `",}`)
		if j < 0 {
			return nil, errPayload
		}
		return rest[:j], nil
	}
	run, err1 := field(`"run":"`)
	s, err2 := field(`"seq":`)
	d, err3 := field(`"due":`)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, 0, 0, false
	}
	n, err1 := strconv.Atoi(string(s))
	due, err2 := strconv.ParseInt(string(d), 10, 64)
	if err1 != nil || err2 != nil {
		return nil, 0, 0, false
	}
	return run, n, due, true
}
