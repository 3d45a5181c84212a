package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

type listResponse struct {
	Jobs       []jobResponse `json:"jobs"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// listJobs handles GET /v1/topics/{topic}/jobs?state=&label=&kind=&cursor=&limit=.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	tenant, topic, err := s.topicTarget(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	var fe fieldErrors
	state := kairos.State(q.Get("state"))
	if state != "" && !state.Valid() {
		names := make([]string, len(kairos.States))
		for i, st := range kairos.States {
			names[i] = string(st)
		}
		fe.add("state", "%q is not a state: use one of %s", state, strings.Join(names, ", "))
	}
	labels := parseLabelQuery(&fe, q["label"])
	limit := pageLimit(&fe, q.Get("limit"))
	kind := kindQuery(&fe, q.Get("kind"))
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.GetTopic(r.Context(), tenant, topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListJobs(r.Context(), rdb.ListQuery{Tenant: tenant, Topic: topic, State: state, Cursor: q.Get("cursor"), Limit: limit, Labels: labels, Kind: kind})
	if err != nil {
		s.writeError(w, r, cursorError(err))
		return
	}
	writeJSON(w, http.StatusOK, listView(page))
}

// pageLimit reads a listing's limit query parameter: 1 to 500, default 50.
func pageLimit(fe *fieldErrors, v string) int {
	if v == "" {
		return 50
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 500 {
		fe.add("limit", "%q is out of range: use a whole number from 1 to 500", v)
	}
	return n
}

// kindQuery reads a listing's kind query parameter: job, notification, or
// "" for both.
func kindQuery(fe *fieldErrors, v string) kairos.Kind {
	k := kairos.Kind(v)
	if v != "" && !k.Valid() {
		fe.add("kind", "%q is not a kind: use job (a topic's own jobs) or notification (the failure and success notifications kairos makes)", v)
	}
	return k
}

// cursorError turns a cursor the store did not make into a field error.
func cursorError(err error) error {
	if errors.Is(err, rdb.ErrBadCursor) {
		return &ValidationError{Errors: []FieldError{{Field: "cursor", Message: "not a cursor this server returned: pass next_cursor from the previous page"}}}
	}
	return err
}

// listView shows a page of jobs, without their payloads.
func listView(page rdb.ListPage) listResponse {
	out := listResponse{Jobs: make([]jobResponse, len(page.Jobs)), NextCursor: page.Next}
	for i, j := range page.Jobs {
		v := jobView(j)
		v.Payload = nil
		out.Jobs[i] = v
	}
	return out
}
