package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
)

// quotaError is a request refused by its tenant's quota: a 429 whose
// Retry-After is retryAfter.
type quotaError struct {
	detail     string
	retryAfter time.Duration
}

func (e *quotaError) Error() string { return e.detail }

// retryAfterSeconds is a wait as Retry-After says it: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// pendingRetryAfter is the Retry-After of a create refused for the
// tenant's pending jobs: they end when they are delivered, dead or
// cancelled, not at a time kairos knows.
const pendingRetryAfter = 5 * time.Second

// quotaTTL is how long a process trusts a tenant's quota it read: an
// admin's change reaches every process within it.
const quotaTTL = time.Second

// quotas caches tenants' quotas and an estimate of their pending jobs.
type quotas struct {
	mu sync.Mutex
	m  map[string]*tenantQuota
	// near holds a turn a tenant whose creates are admitted one at a time
	// near its max_pending (admitPending).
	near map[string]chan struct{}
}

type tenantQuota struct {
	q       kairos.Quota
	custom  bool
	expires time.Time
	// pending is the tenant's pending jobs as read at pendingAt, plus the
	// jobs this process let it create since.
	pending   int64
	pendingAt time.Time
}

// quotaOf returns tenant's quota: its own when an admin set one, else the
// default; custom says which.
func (s *Server) quotaOf(ctx context.Context, tenant string) (kairos.Quota, bool, error) {
	now := time.Now()
	s.quotas.mu.Lock()
	if e := s.quotas.m[tenant]; e != nil && now.Before(e.expires) {
		q, custom := e.q, e.custom
		s.quotas.mu.Unlock()
		return q, custom, nil
	}
	s.quotas.mu.Unlock()
	o, custom, err := s.store.GetQuota(ctx, tenant)
	if err != nil {
		return kairos.Quota{}, false, err
	}
	q := o.Apply(s.cfg.Quota)
	s.quotas.mu.Lock()
	defer s.quotas.mu.Unlock()
	if s.quotas.m == nil || len(s.quotas.m) > 10000 {
		s.quotas.m = map[string]*tenantQuota{}
	}
	e := s.quotas.m[tenant]
	if e == nil {
		e = &tenantQuota{}
		s.quotas.m[tenant] = e
	}
	e.q, e.custom, e.expires = q, custom, now.Add(quotaTTL)
	return q, custom, nil
}

// forgetQuota drops tenant's cached quota (this process changed it).
func (s *Server) forgetQuota(tenant string) {
	s.quotas.mu.Lock()
	delete(s.quotas.m, tenant)
	s.quotas.mu.Unlock()
}

// limitRate refuses, with a 429, a request past its tenant's request
// rate. Admin tokens are not limited, so an operator can always act.
func (s *Server) limitRate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.FromContext(r.Context())
		if !id.Admin {
			q, _, err := s.quotaOf(r.Context(), id.Tenant)
			if err == nil && q.Rate > 0 {
				var wait time.Duration
				if wait, err = s.store.TakeRequest(r.Context(), id.Tenant, q); err == nil && wait > 0 {
					err = &quotaError{retryAfter: wait, detail: fmt.Sprintf(
						"tenant %q is over its request rate (rate: %d a %s, burst %d); retry after %s, or ask an admin to raise it",
						id.Tenant, q.Rate, q.RatePeriod, q.Burst, wait.Round(time.Millisecond))}
				}
			}
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// pendingFar is the share of a tenant's max_pending under which a
// process trusts its estimate of the tenant's pending jobs for
// pendingTrust rather than reading them from Redis for every create.
const (
	pendingFar   = 0.9
	pendingTrust = 250 * time.Millisecond
)

// admitPending says how many of n new pending jobs tenant may create
// under its max_pending: n, fewer, or none (then a 429 error); the caller
// stores them, then calls release. Far from the limit a fresh estimate
// decides; near it, the tenant's pending jobs are read from Redis
// (TenantPending, one HGET a shard), and this process admits the
// tenant's creates one at a time until release, so that it never passes
// the limit itself. Creates racing on several processes may pass it by
// their creates in flight.
func (s *Server) admitPending(ctx context.Context, tenant string, n int) (allowed int, release func(), err error) {
	q, _, err := s.quotaOf(ctx, tenant)
	if err != nil || q.MaxPending <= 0 || n == 0 {
		return n, func() {}, err
	}
	now := time.Now()
	s.quotas.mu.Lock()
	e := s.quotas.m[tenant]
	if e != nil && now.Sub(e.pendingAt) < pendingTrust && float64(e.pending+int64(n)) < pendingFar*float64(q.MaxPending) {
		e.pending += int64(n)
		s.quotas.mu.Unlock()
		return n, func() {}, nil
	}
	if s.quotas.near == nil {
		s.quotas.near = map[string]chan struct{}{}
	}
	turn := s.quotas.near[tenant]
	if turn == nil {
		turn = make(chan struct{}, 1)
		s.quotas.near[tenant] = turn
	}
	s.quotas.mu.Unlock()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return 0, func() {}, ctx.Err()
	}
	release = func() { <-turn }
	pending, err := s.store.TenantPending(ctx, tenant)
	if err != nil {
		release()
		return 0, func() {}, err
	}
	left := q.MaxPending - pending
	allowed = int(min(int64(n), max(left, 0)))
	s.quotas.mu.Lock()
	if e := s.quotas.m[tenant]; e != nil {
		e.pending, e.pendingAt = pending+int64(allowed), time.Now()
	}
	s.quotas.mu.Unlock()
	if allowed == 0 {
		release()
		return 0, func() {}, pendingError(tenant, pending, q.MaxPending)
	}
	return allowed, release, nil
}

func pendingError(tenant string, pending, limit int64) error {
	return &quotaError{retryAfter: pendingRetryAfter, detail: fmt.Sprintf(
		"tenant %q has %d pending jobs and may have at most %d (max_pending); cancel some or wait until they are delivered, or ask an admin to raise it",
		tenant, pending, limit)}
}

// needPending refuses, with a 429, one more pending job past tenant's
// max_pending; the caller calls release once it stored the job (or not).
func (s *Server) needPending(ctx context.Context, tenant string) (release func(), err error) {
	_, release, err = s.admitPending(ctx, tenant, 1)
	return release, err
}

// quotaRequest is the body of PUT /v1/tenants/{tenant}/quota. A field
// left out takes the deployment's default; 0 is no limit.
type quotaRequest struct {
	MaxPending *int64            `json:"max_pending"`
	Rate       *quotaRateRequest `json:"rate"`
	Burst      *int              `json:"burst"`
}

type quotaRateRequest struct {
	Limit  *int    `json:"limit"`
	Period *string `json:"period"`
}

// quotaResponse is a tenant's quota in force and its pending jobs.
type quotaResponse struct {
	Tenant     string             `json:"tenant"`
	MaxPending int64              `json:"max_pending"`
	Rate       *quotaRateResponse `json:"rate"`
	Burst      int                `json:"burst,omitempty"`
	Pending    int64              `json:"pending"`
	Custom     bool               `json:"custom"`
}

type quotaRateResponse struct {
	Limit  int    `json:"limit"`
	Period string `json:"period"`
}

const (
	maxQuotaPending = 1 << 40
	maxQuotaRate    = 1_000_000
)

func (req quotaRequest) override() (kairos.QuotaOverride, error) {
	var fe fieldErrors
	var o kairos.QuotaOverride
	if req.MaxPending != nil {
		if n := *req.MaxPending; n < 0 || n > maxQuotaPending {
			fe.add("max_pending", "%d is out of range: allowed 0 (no limit) to %d", n, int64(maxQuotaPending))
		}
		o.MaxPending = req.MaxPending
	}
	if req.Rate != nil {
		switch {
		case req.Rate.Limit == nil:
			fe.add("rate.limit", "required: requests per period, 0 for no limit")
		case *req.Rate.Limit < 0 || *req.Rate.Limit > maxQuotaRate:
			fe.add("rate.limit", "%d is out of range: allowed 0 (no limit) to %d", *req.Rate.Limit, maxQuotaRate)
		default:
			o.Rate = req.Rate.Limit
		}
		period := time.Second
		if req.Rate.Period != nil {
			period = parseDuration(&fe, "rate.period", *req.Rate.Period, time.Millisecond, 24*time.Hour)
		}
		o.RatePeriod = &period
	}
	if req.Burst != nil {
		if b := *req.Burst; b < 1 || b > maxQuotaRate {
			fe.add("burst", "%d is out of range: allowed 1 to %d", b, maxQuotaRate)
		}
		o.Burst = req.Burst
	}
	return o, fe.err()
}

// quotaTarget returns the tenant named in the path; only an admin may
// name another than its own (write says the route changes it: admins only).
func (s *Server) quotaTarget(r *http.Request, write bool) (string, error) {
	id, _ := auth.FromContext(r.Context())
	tenant := chi.URLParam(r, "tenant")
	if !auth.TenantPattern.MatchString(tenant) {
		return "", &ValidationError{Errors: []FieldError{{Field: "tenant", Message: fmt.Sprintf("%q is not a valid tenant name: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", tenant)}}}
	}
	if !id.Admin && (write || tenant != id.Tenant) {
		return "", errorf(http.StatusForbidden, "a tenant's quota is set by an admin token (admin: true); a tenant may read its own")
	}
	return tenant, nil
}

func (s *Server) quotaView(ctx context.Context, tenant string) (quotaResponse, error) {
	q, custom, err := s.quotaOf(ctx, tenant)
	if err != nil {
		return quotaResponse{}, err
	}
	pending, err := s.store.TenantPending(ctx, tenant)
	if err != nil {
		return quotaResponse{}, err
	}
	v := quotaResponse{Tenant: tenant, MaxPending: q.MaxPending, Pending: pending, Custom: custom}
	if q.Rate > 0 {
		v.Rate = &quotaRateResponse{Limit: q.Rate, Period: q.RatePeriod.String()}
		v.Burst = q.Burst
	}
	return v, nil
}

func (s *Server) getQuota(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.quotaTarget(r, false)
	var v quotaResponse
	if err == nil {
		v, err = s.quotaView(r.Context(), tenant)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) putQuota(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.quotaTarget(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req quotaRequest
	if err := s.decode(w, r, 4<<10, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := req.override()
	if err == nil {
		err = s.store.PutQuota(r.Context(), tenant, o)
	}
	s.forgetQuota(tenant)
	var v quotaResponse
	if err == nil {
		v, err = s.quotaView(r.Context(), tenant)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) deleteQuota(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.quotaTarget(r, true)
	if err == nil {
		_, err = s.store.DeleteQuota(r.Context(), tenant)
	}
	s.forgetQuota(tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
