package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// maxBatch is the largest batch create; maxBatchBody bounds its body
// (batchBody).
const (
	maxBatch     = 1000
	maxBatchBody = 32 << 20
)

type batchRequest struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// batchItem is one job's outcome in a batch create.
type batchItem struct {
	Index  int          `json:"index"`
	Status int          `json:"status"`
	Job    *jobResponse `json:"job,omitempty"`
	Error  *Problem     `json:"error,omitempty"`
}

type batchResponse struct {
	Created  int `json:"created"`
	Replaced int `json:"replaced"` // every 200: replaced, debounced, kept, duplicate
	// Kept and Duplicate count, of Replaced, the items that changed nothing.
	Kept      int         `json:"kept,omitempty"`
	Duplicate int         `json:"duplicate,omitempty"`
	Failed    int         `json:"failed"`
	Results   []batchItem `json:"results"`
}

// createJobs handles POST /v1/topics/{topic}/jobs/batch: every item is
// validated and stored on its own; one bad item fails only itself.
func (s *Server) createJobs(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req batchRequest
	if err := s.decode(w, r, batchBody(s.cfg.MaxPayload), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case req.Jobs == nil:
		s.writeError(w, r, &ValidationError{Errors: []FieldError{{Field: "jobs", Message: "required: an array of 1 to 1000 jobs"}}})
		return
	case len(req.Jobs) == 0 || len(req.Jobs) > maxBatch:
		s.writeError(w, r, &ValidationError{Errors: []FieldError{{Field: "jobs", Message: fmt.Sprintf("holds %d jobs; allowed 1 to %d", len(req.Jobs), maxBatch)}}})
		return
	}
	t, known, err := s.jobTopic(r.Context(), tenant, topic)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.store.Now()
	resp := batchResponse{Results: make([]batchItem, len(req.Jobs))}
	var valid []kairos.Job
	var at []int
	seen := make(map[string]int, len(req.Jobs))
	for i, raw := range req.Jobs {
		// an item is valid JSON (the envelope's decoding checked it)
		var jr jobRequest
		var err error
		if !jr.decodeFastOf(raw, true) {
			err = decodeStrict(raw, &jr)
		}
		var j kairos.Job
		if err == nil {
			j, err = jr.toJob(tenant, topic, now, s.cfg.MaxPayload, s.cfg.AllowPrivate)
		}
		if err == nil {
			err = needCallback(t, known, j)
		}
		if err == nil {
			if first, dup := seen[j.ID]; dup {
				err = &ValidationError{Errors: []FieldError{{Field: "id", Message: fmt.Sprintf("id %q is also used by jobs[%d] of this batch", j.ID, first)}}}
			} else {
				seen[j.ID] = i
			}
		}
		if err != nil {
			err = prefixed(err, "jobs["+strconv.Itoa(i)+"].")
			p := s.problem(r, err)
			resp.Results[i] = batchItem{Index: i, Status: p.Status, Error: &p}
			continue
		}
		s.dedupID(&j)
		valid = append(valid, j)
		at = append(at, i)
	}
	if len(valid) > 0 {
		// past the tenant's max_pending, the last items are refused
		allowed, release, err := s.admitPending(r.Context(), tenant, len(valid))
		if err != nil && !errors.As(err, new(*quotaError)) {
			s.writeError(w, r, err)
			return
		}
		defer release()
		if allowed < len(valid) {
			qerr := err
			if qerr == nil {
				qerr = &quotaError{retryAfter: pendingRetryAfter, detail: fmt.Sprintf(
					"tenant %q may create %d more pending jobs (max_pending): jobs[%d] and after were refused; cancel some or wait until they are delivered, or ask an admin to raise it",
					tenant, allowed, at[allowed])}
			}
			for k := allowed; k < len(valid); k++ {
				p := s.problem(r, qerr)
				resp.Results[at[k]] = batchItem{Index: at[k], Status: p.Status, Error: &p}
			}
			valid, at = valid[:allowed], at[:allowed]
		}
	}
	if len(valid) > 0 {
		if err := s.ensureTopic(r.Context(), t, known); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if len(valid) > 0 {
		id := ""
		if len(valid) == 1 {
			id = valid[0].ID
		}
		tp, ts, end := s.startCreate(r, tenant, topic, id, len(valid))
		for i := range valid {
			valid[i].TraceParent, valid[i].TraceState = tp, ts
		}
		defer end(nil)
	}
	for k, res := range s.store.EnqueueBatch(r.Context(), valid) {
		i := at[k]
		if res.Err != nil {
			p := s.problem(r, res.Err)
			resp.Results[i] = batchItem{Index: i, Status: p.Status, Error: &p}
			continue
		}
		res.Job.Payload = nil // not shown in a batch's results
		v, status := upserted(res)
		resp.Results[i] = batchItem{Index: i, Status: status, Job: &v}
	}
	for _, it := range resp.Results {
		switch it.Status {
		case http.StatusCreated:
			resp.Created++
		case http.StatusOK:
			resp.Replaced++
			switch it.Job.Result {
			case string(rdb.ResultKept):
				resp.Kept++
			case string(rdb.ResultDuplicate):
				resp.Duplicate++
			}
		default:
			resp.Failed++
		}
	}
	if resp.Failed == len(resp.Results) {
		s.writeBatchFailed(w, resp)
		return
	}
	writeJSON(w, resp.status(), resp)
}

// status is the status of a batch in which some item succeeded: 201 when
// no item failed and some job was created, 207 when some items failed and
// others did not, else 200 (every job replaced one that had not fired).
func (b batchResponse) status() int {
	switch {
	case b.Failed == 0 && b.Created > 0:
		return http.StatusCreated
	case b.Failed > 0:
		return http.StatusMultiStatus
	}
	return http.StatusOK
}

// batchProblem is the answer to a batch in which every item failed: a
// problem document that also carries the batch's counts and results.
type batchProblem struct {
	Problem
	batchResponse
}

// writeBatchFailed answers a batch in which every item failed with a
// problem whose status is the items' when they share one (400 for a batch
// of invalid jobs, 429 for one over a quota, 503 while Redis is away),
// else 500 when some item failed on the server's side, else 400; the
// results name each item's fault as in any batch answer.
func (s *Server) writeBatchFailed(w http.ResponseWriter, resp batchResponse) {
	status := resp.Results[0].Status
	server := false
	for _, it := range resp.Results {
		if it.Status != status {
			status = 0
		}
		server = server || it.Status >= 500
	}
	switch {
	case status != 0:
	case server:
		status = http.StatusInternalServerError
	default:
		status = http.StatusBadRequest
	}
	first := resp.Results[0].Error
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		retryAfter := first.retryAfter
		if retryAfter == "" {
			retryAfter = "1"
		}
		w.Header().Set("Retry-After", retryAfter)
	}
	p := batchProblem{Problem: Problem{Type: problemBase + "batch-failed", Title: "Every job of the batch failed", Status: status,
		Detail: fmt.Sprintf("none of the %d jobs was stored; results[i].error says why each failed (the first: %s)", len(resp.Results), first.Detail)},
		batchResponse: resp}
	writeJSONType(w, status, "application/problem+json", p)
}

// prefixed puts a batch item's prefix on the field names of its error.
func prefixed(err error, prefix string) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		out := &ValidationError{Status: ve.Status}
		for _, f := range ve.Errors {
			name := prefix + f.Field
			if f.Field == "body" {
				name = prefix[:len(prefix)-1]
			}
			out.Errors = append(out.Errors, FieldError{Field: name, Message: f.Message})
		}
		return out
	}
	return err
}
