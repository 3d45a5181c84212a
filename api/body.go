package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// How a request body is read (Server.readBody): never sized from the
// length it declares, only from what arrives.
const (
	// bodyGrace is how long a body may take to start arriving, counted
	// from when its handler starts to read it.
	bodyGrace = time.Second
	// BodyFloor is the slowest a body may arrive after bodyGrace, in bytes
	// a second on average: one that falls behind is answered 408 and its
	// connection closed, whatever length it declared.
	BodyFloor = 16 << 10
	// bodyFree is what a body may hold without the server's budget of body
	// bytes in flight (Config.MaxBodyInflight): a small create never
	// waits behind large bodies.
	bodyFree = 4 << 10
	// bodyWait is the longest a body waits for the budget before it is
	// answered 503 with Retry-After.
	bodyWait = time.Second
	// DefaultMaxBodyInflight is the default of Config.MaxBodyInflight (or
	// twice LargestBody, when that is more).
	DefaultMaxBodyInflight = 64 << 20
)

// jobBody and batchBody are the largest bodies of a job's (or schedule's)
// create and of a batch create, with payloads of up to maxPayload bytes:
// a batch's is bounded on its own, so that one request cannot make the
// server hold a thousand maximal payloads.
func jobBody(maxPayload int64) int64   { return maxPayload + jobBodyRoom }
func batchBody(maxPayload int64) int64 { return min(maxBatch*(maxPayload+batchItemRoom), maxBatchBody) }

// LargestBody is the largest request body a route takes with payloads of
// up to maxPayload bytes: Config.MaxBodyInflight must hold one.
func LargestBody(maxPayload int64) int64 { return max(jobBody(maxPayload), batchBody(maxPayload)) }

// bodyBudget is the server's budget of request body bytes in flight: the
// buffers of the bodies being read, past each one's first bodyFree bytes.
// Its waiters are not queued in order: a small need that fits goes before
// a large one that does not.
type bodyBudget struct {
	mu    sync.Mutex
	used  int64
	most  int64
	freed chan struct{} // closed, and replaced, when bytes are released
}

func newBodyBudget(most int64) *bodyBudget {
	return &bodyBudget{most: most, freed: make(chan struct{})}
}

// take takes n bytes of the budget, waiting for them until ctx ends; false
// when they were not had by then. A need larger than the whole budget
// fails at once.
func (b *bodyBudget) take(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.used+n <= b.most {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if n > b.most {
			return false
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// give gives n bytes back.
func (b *bodyBudget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// budgetError is the answer to a body that the budget had no room for
// within bodyWait: a 503 with Retry-After.
type budgetError struct{ most int64 }

func (e *budgetError) Error() string {
	return fmt.Sprintf("the server holds as many request body bytes as it takes at once (%d, KAIROS_MAX_BODY_INFLIGHT) and this body waited %s for room: retry after Retry-After",
		e.most, bodyWait)
}

// bodyRead is a body read off the wire, and its share of the budget.
type bodyRead struct {
	bytes  []byte
	budget *bodyBudget
	taken  int64
}

// release gives the body's share of the budget back; the body's bytes
// must not be used after.
func (b *bodyRead) release() { b.budget.give(b.taken) }

// readBody reads r's body, at most limit bytes (one more tells a body too
// large), into a buffer that grows only as bytes arrive, doubling: the
// length the request declares only caps the first buffer. Each growth past
// bodyFree takes its bytes from the server's budget first, waiting
// bodyWait at most (then a 503). The body gets bodyGrace to start, then
// must arrive at BodyFloor bytes a second on average (the time it waited
// for the budget does not count), else it is a 408. Once it is read, the
// connection's read and write deadlines are the server's timeouts again,
// from now; a body not read whole closes its connection after the answer.
// The caller releases what it returns, error or not.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body *bodyRead, err error) {
	body = &bodyRead{budget: s.bodies}
	rc := http.NewResponseController(w)
	// An error means the writer cannot move deadlines (a test's recorder):
	// the server's own deadlines then hold.
	paced := rc.SetReadDeadline(time.Now().Add(bodyGrace)) == nil
	defer func() {
		if err != nil {
			w.Header().Set("Connection", "close")
		}
		if paced {
			now := time.Now()
			if err == nil {
				rc.SetReadDeadline(now.Add(s.cfg.ReadTimeout))
			}
			rc.SetWriteDeadline(now.Add(s.cfg.WriteTimeout))
		}
	}()
	first := min(int64(bodyFree), limit+1)
	if r.ContentLength >= 0 {
		first = min(first, r.ContentLength+1)
	}
	buf := make([]byte, 0, first)
	start := time.Now()
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return body, tooLarge(limit)
			}
			grown := min(2*int64(cap(buf)), limit+1)
			if need := grown - max(int64(cap(buf)), bodyFree); need > 0 {
				waited := time.Now()
				ctx, cancel := context.WithTimeout(r.Context(), bodyWait)
				ok := body.budget.take(ctx, need)
				cancel()
				if !ok {
					return body, &budgetError{most: body.budget.most}
				}
				body.taken += need
				start = start.Add(time.Since(waited))
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		if paced {
			rc.SetReadDeadline(start.Add(bodyGrace + time.Duration(len(buf))*time.Second/BodyFloor))
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF && int64(len(buf)) > limit:
			return body, tooLarge(limit)
		case err == io.EOF:
			body.bytes = buf
			return body, nil
		case isTimeout(err):
			return body, &ValidationError{Status: http.StatusRequestTimeout, Errors: []FieldError{{Field: "body", Message: fmt.Sprintf(
				"arrived slower than %d bytes a second after its first second (%d bytes in %s): send it at least that fast", BodyFloor, len(buf),
				time.Since(start).Round(time.Millisecond))}}}
		case err != nil:
			return body, errorf(http.StatusBadRequest, "could not read the request body: "+err.Error())
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
