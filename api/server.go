// Package api serves kairos's REST API v1: topics, jobs, signing keys and
// stats for tenants authenticated by bearer JWTs, with problem+json errors.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/bulk"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/tracing"
)

// Config tunes the API. Zero values take the defaults.
type Config struct {
	MaxPayload int64 // largest job payload in bytes; default 256 KiB
	// AllowPrivate accepts callback URLs whose host is a literal loopback,
	// private, link-local or metadata address, or localhost
	// (KAIROS_ALLOW_PRIVATE_URLS); without it they are refused with a 400.
	AllowPrivate bool
	Logger       *slog.Logger
	// OnTopicChange is called after a topic is registered, changed or
	// deleted, so that a worker in the same process picks it up at once.
	OnTopicChange func()
	// Page serves the admin page at / and /assets/*; Metrics serves
	// GET /metrics. Either may be nil, and its routes then answer 404.
	Page    http.Handler
	Metrics http.Handler
	// RedisTimeout bounds the Redis work of each request: past it the
	// request answers 503 rather than hang on a frozen or partitioned Redis
	// (the Redis client must honour context deadlines). Default 1s.
	RedisTimeout time.Duration
	// Tracer traces creates (internal/tracing); nil does not trace, and
	// jobs still keep the trace context their create request carried.
	Tracer trace.TracerProvider
	// Tick serves POST /v1/tick; nil answers 404.
	Tick TickFunc
	// Quota is every tenant's default quota (an admin may set another for
	// one tenant); zero fields are no limit.
	Quota kairos.Quota
	// ReadTimeout is the server's (http.Server.ReadTimeout): a handler that
	// reads a body paces it itself (readBody: a second to start, then
	// BodyFloor bytes a second), and gives the rest of the request
	// ReadTimeout from the body's end. WriteTimeout is the server's too,
	// counted again from the body's end; POST /v1/tick moves it by its
	// tick. Zero: 15s and 30s.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// MaxBodyInflight is the server's budget of request body bytes in
	// flight (KAIROS_MAX_BODY_INFLIGHT): the buffers of the bodies being
	// read, past each one's first 4 KiB. A body that would pass it waits a
	// second at most, then is answered 503 with Retry-After. It must hold
	// LargestBody(MaxPayload). Default DefaultMaxBodyInflight, or twice
	// LargestBody when that is more.
	MaxBodyInflight int64
	// MaxTokenTTL is the longest a token minted through POST /v1/tokens
	// may live (KAIROS_MAX_TOKEN_TTL); none outlives the token that mints
	// it either. Default DefaultMaxTokenTTL.
	MaxTokenTTL time.Duration
	// Bulk runs the bulk operations this process creates or takes over;
	// nil answers POST .../jobs/bulk with a 404.
	Bulk *bulk.Runner
}

// DefaultRedisTimeout is the default of Config.RedisTimeout.
const DefaultRedisTimeout = time.Second

// DefaultMaxPayload is the default payload limit.
const DefaultMaxPayload = 256 << 10

// Server holds the API's dependencies.
type Server struct {
	store   *rdb.Store
	auth    *auth.Authenticator
	cfg     Config
	log     *slog.Logger
	onTopic func()
	tracer  trace.Tracer
	quotas  quotas
	revoked revokedSync
	bodies  *bodyBudget
	filters filterCache // subscriptions' filters, parsed
}

// New returns the API handler.
func New(store *rdb.Store, a *auth.Authenticator, cfg Config) http.Handler {
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RedisTimeout <= 0 {
		cfg.RedisTimeout = DefaultRedisTimeout
	}
	cfg.Quota = cfg.Quota.WithDefaults()
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.MaxBodyInflight <= 0 {
		cfg.MaxBodyInflight = max(DefaultMaxBodyInflight, 2*LargestBody(cfg.MaxPayload))
	}
	if cfg.MaxTokenTTL <= 0 {
		cfg.MaxTokenTTL = DefaultMaxTokenTTL
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	s := &Server{store: store, auth: a, cfg: cfg, log: cfg.Logger.With("component", "api"), onTopic: cfg.OnTopicChange,
		tracer: cfg.Tracer.Tracer(tracing.Scope), bodies: newBodyBudget(cfg.MaxBodyInflight)}
	return s.routes()
}

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)))
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.readyz)
	r.Get("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(kairos.OpenAPI)
	})
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.bounded, s.authenticate, s.limitRate)
		r.Get("/topics", s.listTopics)
		r.Route("/topics/{topic}", func(r chi.Router) {
			r.Put("/", s.putTopic)
			r.Get("/", s.getTopic)
			r.Delete("/", s.deleteTopic)
			r.Post("/pause", s.pauseTopic(true))
			r.Post("/resume", s.pauseTopic(false))
			r.Get("/signing-keys", s.getTopicSigningKeys)
			r.Post("/signing-keys/rotate", s.rotateTopicSigningKeys)
			r.Post("/jobs", s.createJob)
			r.Get("/jobs", s.listJobs)
			r.Post("/jobs/batch", s.createJobs)
			r.Post("/jobs/bulk", s.bulkJobs)
			r.Get("/jobs/{id}", s.getJob)
			r.Patch("/jobs/{id}", s.rescheduleJob)
			r.Delete("/jobs/{id}", s.cancelJob)
			r.Post("/jobs/{id}/retry", s.retryJob)
			r.Get("/schedules", s.listSchedules)
			r.Put("/schedules/{id}", s.putSchedule)
			r.Get("/schedules/{id}", s.getSchedule)
			r.Delete("/schedules/{id}", s.deleteSchedule)
			r.Post("/schedules/{id}/pause", s.pauseSchedule(true))
			r.Post("/schedules/{id}/resume", s.pauseSchedule(false))
			r.Post("/schedules/{id}/trigger", s.triggerSchedule)
			r.Post("/schedules/{id}/backfill", s.backfillSchedule)
			r.Get("/subscriptions", s.listSubscriptions)
			r.Put("/subscriptions/{sub}", s.putSubscription)
			r.Get("/subscriptions/{sub}", s.getSubscription)
			r.Delete("/subscriptions/{sub}", s.deleteSubscription)
			r.Post("/subscriptions/{sub}/pause", s.pauseSubscription(true))
			r.Post("/subscriptions/{sub}/resume", s.pauseSubscription(false))
			r.Get("/subscriptions/{sub}/signing-keys", s.getSubscriptionSigningKeys)
			r.Post("/subscriptions/{sub}/signing-keys/rotate", s.rotateSubscriptionSigningKeys)
			r.Post("/messages", s.publish)
			r.Get("/messages/{id}", s.getMessage)
		})
		r.Get("/dead", s.listDead)
		r.Get("/signing-keys", s.getSigningKeys)
		r.Post("/signing-keys/rotate", s.rotateSigningKeys)
		r.Get("/stats", s.stats)
		r.Post("/tick", s.tick)
		r.Get("/tenants/{tenant}/quota", s.getQuota)
		r.Put("/tenants/{tenant}/quota", s.putQuota)
		r.Delete("/tenants/{tenant}/quota", s.deleteQuota)
		r.Post("/tenants/{tenant}/revocations", s.revokeTokens)
		r.Post("/tokens", s.mintToken)
		r.Get("/operations/{id}", s.getOperation)
	})
	r.Get("/metrics", s.mounted(s.cfg.Metrics, "metrics"))
	page := s.mounted(s.cfg.Page, "the admin page")
	r.Get("/", page)
	r.Get("/assets/*", page)
	return r
}

// mounted returns h, or a 404 problem when this process does not serve it.
func (s *Server) mounted(h http.Handler, what string) http.HandlerFunc {
	if h != nil {
		return h.ServeHTTP
	}
	return func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, what+" is not served by this process"))
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RedisTimeout)
	defer cancel()
	if err := s.store.Writable(ctx); err != nil {
		// the error names Redis's address and what failed: the log has it,
		// the anonymous caller does not
		s.log.Warn("readyz: Redis cannot take writes", "err", err)
		detail := "Redis is unreachable: this process cannot serve requests now"
		if errors.Is(err, rdb.ErrNotMaster) {
			detail = "the Redis node kairos writes to is not a master (a failover is under way, or KAIROS_REDIS_URL names a replica)"
		}
		s.writeError(w, r, errorf(http.StatusServiceUnavailable, detail))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// bounded gives a request at most RedisTimeout for its Redis work: a
// frozen or partitioned Redis makes it answer 503 (its context's deadline
// passed) instead of hanging. The time its body took to arrive does not
// count: decode moves the deadline by it (notBody).
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline := time.Now().Add(s.cfg.RedisTimeout)
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		b := &redisBudget{client: r.Context(), deadline: deadline, cancel: cancel}
		defer func() { b.cancel() }()
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, redisBudgetKey{}, b)))
	})
}

// redisBudget is the Redis time of a request (bounded).
type redisBudget struct {
	client   context.Context // the request's context without the budget: it ends when the client goes
	deadline time.Time
	cancel   context.CancelFunc // ends the budget's contexts
}

type redisBudgetKey struct{}

// notBody moves r's Redis deadline by took, the time its body took to
// arrive, when that was more than a few milliseconds: r's context is
// replaced in place, keeping its values.
func (s *Server) notBody(r *http.Request, took time.Duration) {
	b, ok := r.Context().Value(redisBudgetKey{}).(*redisBudget)
	if !ok || took < 5*time.Millisecond {
		return
	}
	b.deadline = b.deadline.Add(took)
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), b.deadline)
	stop := context.AfterFunc(b.client, cancel) // a client that goes still cancels it
	prev := b.cancel
	b.cancel = func() { stop(); cancel(); prev() }
	*r = *r.WithContext(ctx)
}

// recoverer turns a handler panic into a 500 problem and one log line.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate requires a valid bearer token on every /v1 route.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.syncRevoked(r.Context())
		id, err := s.auth.Authenticate(r.Header.Get("Authorization"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}

// tenant returns the tenant a request acts on: the token's, or for an admin
// the one named by ?tenant= (all tenants when allowAll and none is named).
func (s *Server) tenant(r *http.Request, allowAll bool) (string, error) {
	id, _ := auth.FromContext(r.Context())
	q := r.URL.Query().Get("tenant")
	if q == "" {
		if id.Admin && allowAll {
			return "", nil
		}
		return id.Tenant, nil
	}
	if !id.Admin {
		if q == id.Tenant {
			return q, nil
		}
		return "", errorf(http.StatusForbidden, "the tenant parameter needs an admin token (admin: true)")
	}
	if !auth.TenantPattern.MatchString(q) {
		return "", &ValidationError{Errors: []FieldError{{Field: "tenant", Message: "not a valid tenant name"}}}
	}
	return q, nil
}

// topicTarget returns the tenant and the topic named in the path.
func (s *Server) topicTarget(r *http.Request) (string, string, error) {
	tenant, err := s.tenant(r, false)
	if err != nil {
		return "", "", err
	}
	name := chi.URLParam(r, "topic")
	if !validTopic(name) {
		if r.Method == http.MethodPut {
			return "", "", &ValidationError{Errors: []FieldError{{Field: "topic", Message: fmt.Sprintf("%q is not a valid topic name: %s", name, topicRule)}}}
		}
		return "", "", fmt.Errorf("topic %q: %w", name, kairos.ErrNotFound)
	}
	return tenant, name, nil
}

type signingKeysResponse struct {
	Current string `json:"current"`
	Next    string `json:"next"`
}

func (s *Server) getSigningKeys(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.tenant(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k, err := s.store.GetSigningKeys(r.Context(), tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, signingKeysResponse{Current: k.Current, Next: k.Next})
}

func (s *Server) rotateSigningKeys(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.tenant(r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k, err := s.store.RotateSigningKeys(r.Context(), tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, signingKeysResponse{Current: k.Current, Next: k.Next})
}
