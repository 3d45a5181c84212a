package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// bulkRequest is the body of POST /v1/topics/{topic}/jobs/bulk.
type bulkRequest struct {
	Action *string            `json:"action"`
	Filter *bulkFilterRequest `json:"filter"`
}

// bulkFilterRequest selects the jobs of a bulk operation; every field
// given must match.
type bulkFilterRequest struct {
	State     *string           `json:"state"`
	Labels    map[string]string `json:"labels"`
	RunAtFrom *string           `json:"run_at_from"`
	RunAtTo   *string           `json:"run_at_to"`
}

// operationResponse is a bulk operation as the API shows it. Operation
// repeats the id in the answer to its creation.
type operationResponse struct {
	Operation  string         `json:"operation,omitempty"`
	ID         string         `json:"id"`
	Topic      string         `json:"topic"`
	Action     string         `json:"action"`
	Filter     filterResponse `json:"filter"`
	State      string         `json:"state"`
	Matched    int64          `json:"matched"`
	Done       int64          `json:"done"`
	Failed     int64          `json:"failed"`
	CreatedAt  string         `json:"created_at"`
	FinishedAt string         `json:"finished_at,omitempty"`
}

type filterResponse struct {
	State     kairos.State      `json:"state,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	RunAtFrom string            `json:"run_at_from,omitempty"`
	RunAtTo   string            `json:"run_at_to,omitempty"`
}

func operationView(op rdb.Operation) operationResponse {
	return operationResponse{ID: op.ID, Topic: op.Topic, Action: op.Action, State: op.State,
		Filter: filterResponse{State: op.Filter.State, Labels: op.Filter.Labels,
			RunAtFrom: formatTime(op.Filter.RunAtFrom), RunAtTo: formatTime(op.Filter.RunAtTo)},
		Matched: op.Matched, Done: op.Done, Failed: op.Failed,
		CreatedAt: formatTime(op.CreatedAt), FinishedAt: formatTime(op.FinishedAt)}
}

// toOperation validates a bulk request.
func (req bulkRequest) toOperation(tenant, topic string) (rdb.Operation, error) {
	var fe fieldErrors
	op := rdb.Operation{ID: rdb.NewOperationID(), Tenant: tenant, Topic: topic}
	switch {
	case req.Action == nil:
		fe.add("action", "required: cancel or replay")
	case *req.Action == rdb.ActionCancel || *req.Action == rdb.ActionReplay:
		op.Action = *req.Action
	default:
		fe.add("action", "%q is not an action: use cancel or replay", *req.Action)
	}
	f := req.Filter
	if f == nil || (f.State == nil && len(f.Labels) == 0 && f.RunAtFrom == nil && f.RunAtTo == nil) {
		fe.add("filter", "required, with at least one of state, labels, run_at_from, run_at_to: an operation on every job of a topic is refused")
		return op, fe.err()
	}
	if f.State != nil {
		st := kairos.State(*f.State)
		if !st.Valid() {
			names := make([]string, len(kairos.States))
			for i, s := range kairos.States {
				names[i] = string(s)
			}
			fe.add("filter.state", "%q is not a state: use one of %s", *f.State, strings.Join(names, ", "))
		}
		op.Filter.State = st
	}
	op.Filter.Labels = checkLabels(&fe, "filter.labels", f.Labels)
	if f.RunAtFrom != nil {
		op.Filter.RunAtFrom = parseBound(&fe, "filter.run_at_from", *f.RunAtFrom)
	}
	if f.RunAtTo != nil {
		op.Filter.RunAtTo = parseBound(&fe, "filter.run_at_to", *f.RunAtTo)
	}
	if from, to := op.Filter.RunAtFrom, op.Filter.RunAtTo; !from.IsZero() && !to.IsZero() && !from.Before(to) {
		fe.add("filter.run_at_to", "must be after run_at_from: the range is [run_at_from, run_at_to)")
	}
	return op, fe.err()
}

// parseBound reads a run_at bound: an RFC 3339 time of the years 1970 to
// 9999, rounded up to the millisecond as run_at is.
func parseBound(fe *fieldErrors, field, s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || strings.ContainsRune(s, ',') || t.Year() < 1970 || t.Year() > 9999 {
		fe.add(field, "%q is not an RFC 3339 time of the years 1970 to 9999 such as \"2026-11-21T10:30:00.250Z\"", s)
		return time.Time{}
	}
	return ceilMS(t).UTC()
}

// bulkJobs handles POST /v1/topics/{topic}/jobs/bulk: it stores the
// operation and answers 202 at once; the runner does the work.
func (s *Server) bulkJobs(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Bulk == nil {
		s.writeError(w, r, errorf(http.StatusNotFound, "bulk operations are not served by this process"))
		return
	}
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req bulkRequest
	if err := s.decode(w, r, 16<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	op, err := req.toOperation(tenant, topic)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.GetTopic(r.Context(), tenant, topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	op, err = s.cfg.Bulk.Create(r.Context(), op)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := operationView(op)
	v.Operation = op.ID
	w.Header().Set("Location", "/v1/operations/"+op.ID)
	writeJSON(w, http.StatusAccepted, v)
}

// getOperation handles GET /v1/operations/{id}. Another tenant's
// operation is a 404. A running operation whose runner died (its lease
// lapsed) is taken over by this process's runner on the way.
func (s *Server) getOperation(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !validID(id) {
		s.writeError(w, r, fmt.Errorf("operation %q: %w", id, kairos.ErrNotFound))
		return
	}
	tenant, err := s.tenant(r, true) // "" for an admin who names no tenant: every tenant's
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	op, err := s.store.GetOperation(r.Context(), id)
	if err == nil && tenant != "" && op.Tenant != tenant {
		err = fmt.Errorf("operation %q: %w", id, kairos.ErrNotFound)
	}
	if err != nil {
		if !errors.Is(err, kairos.ErrNotFound) {
			err = fmt.Errorf("get operation: %w", err)
		}
		s.writeError(w, r, err)
		return
	}
	if op.State == rdb.OpRunning && s.cfg.Bulk != nil && !op.LeaseUntil.IsZero() && s.store.Now().After(op.LeaseUntil) {
		s.cfg.Bulk.Kick(op.ID)
	}
	writeJSON(w, http.StatusOK, operationView(op))
}
