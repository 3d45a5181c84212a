package api

import (
	"net/http"
	"time"

	"github.com/kairos-sh/kairos"
)

// statsWindow is how far back the recent figures reach.
const statsWindow = 5

type latencyStats struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

type recentStats struct {
	Minutes     int          `json:"minutes"`
	Delivered   int64        `json:"delivered"`
	Failed      int64        `json:"failed_attempts"`
	Dead        int64        `json:"dead"`
	DeliveredPS float64      `json:"delivered_per_second"`
	FailedPS    float64      `json:"failed_per_second"`
	Lateness    latencyStats `json:"lateness"`
}

// occurrenceStats count a topic's schedule occurrences since its first
// job (rdb.Occurrences).
type occurrenceStats struct {
	Fired     int64 `json:"fired"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
	Skipped   int64 `json:"skipped"` // instants a schedule's overlap rule did not fire
}

// breakerStats is the state of a topic's circuit breaker.
type breakerStats struct {
	State     string `json:"state"`
	OpenUntil string `json:"open_until,omitempty"`
}

type topicStats struct {
	Tenant      string                 `json:"tenant"`
	Topic       string                 `json:"topic"`
	Counts      map[kairos.State]int64 `json:"counts"`
	Occurrences occurrenceStats        `json:"occurrences"`
	Ready       int64                  `json:"ready_list_length"`
	Recent      recentStats            `json:"recent"`
	Paused      bool                   `json:"paused"`
	Breaker     *breakerStats          `json:"breaker,omitempty"`
}

type statsResponse struct {
	At     string       `json:"at"`
	Topics []topicStats `json:"topics"`
	// DueSoon counts jobs due in each 5-minute slot of the next hour, over
	// every tenant; shown to admins only.
	DueSoon []int64 `json:"due_next_hour,omitempty"`
}

// stats handles GET /v1/stats: counts of jobs and occurrences from the
// counters the scripts keep, and recent figures from per-minute
// aggregates; nothing here scans jobs.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.tenant(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	topics, err := s.store.ListTopics(ctx, tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ready, err := s.store.ReadyLens(ctx, topics)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := statsResponse{At: formatTime(s.store.Now()), Topics: make([]topicStats, 0, len(topics))}
	for i, t := range topics {
		counters, err := s.store.TopicCounters(ctx, t.Tenant, t.Name)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rec, err := s.store.RecentStats(ctx, t.Tenant, t.Name, statsWindow)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		secs := float64(statsWindow * time.Minute / time.Second)
		occ := counters.Occurrences
		brk, err := s.breakerNow(ctx, t)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		resp.Topics = append(resp.Topics, topicStats{Tenant: t.Tenant, Topic: t.Name, Counts: counters.States, Ready: ready[i],
			Paused: t.Paused, Breaker: brk,
			Occurrences: occurrenceStats{Fired: occ.Fired, Delivered: occ.Delivered, Dead: occ.Dead, Skipped: occ.Skipped},
			Recent: recentStats{Minutes: rec.Minutes, Delivered: rec.Delivered, Failed: rec.Failed, Dead: rec.Dead,
				DeliveredPS: float64(rec.Delivered) / secs, FailedPS: float64(rec.Failed) / secs,
				Lateness: latencyStats{Samples: rec.Sampled, P50: rec.P50, P90: rec.P90, P99: rec.P99, Max: rec.Worst}}})
	}
	if tenant == "" {
		due, err := s.store.DueSoon(ctx, 12, 5*time.Minute)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		resp.DueSoon = due
	}
	writeJSON(w, http.StatusOK, resp)
}
