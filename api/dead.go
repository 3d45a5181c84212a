package api

import (
	"net/http"

	"github.com/kairos-sh/kairos/internal/rdb"
)

// listDead handles GET /v1/dead?tenant=&kind=&cursor=&limit=: the dead jobs of
// every topic of the tenant (of every tenant for an admin naming none),
// most recently dead first, from the store's dead letters across topics.
func (s *Server) listDead(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.tenant(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	var fe fieldErrors
	limit := pageLimit(&fe, q.Get("limit"))
	kind := kindQuery(&fe, q.Get("kind"))
	if err := fe.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListDead(r.Context(), rdb.DeadQuery{Tenant: tenant, Cursor: q.Get("cursor"), Limit: limit, Kind: kind})
	if err != nil {
		s.writeError(w, r, cursorError(err))
		return
	}
	writeJSON(w, http.StatusOK, listView(page))
}
