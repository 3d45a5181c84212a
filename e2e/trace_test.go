package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kairos-sh/kairos/client"
)

// propagating is the transport of an application that traces: it sends
// the trace context of the caller's span with each request, as otelhttp's
// transport does.
type propagating struct{ base http.RoundTripper }

func (p propagating) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}

// appSpan starts the application's span that schedules jobs, under a
// remote parent whose tracestate it carries on.
func appSpan(t *testing.T, tp trace.TracerProvider) (context.Context, trace.Span) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	return tp.Tracer("app").Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "checkout")
}

// receivedContext is the span context a callback carried.
func receivedContext(h hit) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h.Header))
	return trace.SpanContextFromContext(ctx)
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// One trace from the create to each attempt: the create is a producer
// span under the application's, each attempt an HTTP client span under the
// create (siblings) with a link to it, the claim a consumer span linking
// the create, and each callback carries its attempt's span context and
// the tracestate, so the receiver joins the trace.
func TestTraceFromCreateToEveryAttempt(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	e := startEngine(t, engineOpts{allowPrivate: true, tracer: tp})
	rcv := newReceiver(t, func(n int, h hit) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	e.putTopicWith("orders", client.TopicRequest{
		CallbackURL: rcv.URL + "/hook?token=s3cret",
		CallbackSettings: client.CallbackSettings{
			Backoff: &client.Backoff{Initial: client.Duration(200 * time.Millisecond), Max: client.Duration(200 * time.Millisecond)},
		},
	})
	c := e.c.With(client.WithHTTPClient(&http.Client{Transport: propagating{http.DefaultTransport}}))
	ctx, app := appSpan(t, tp)
	if _, err := c.CreateJob(ctx, "orders", client.JobRequest{ID: "o1", Delay: client.Duration(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	app.End()
	e.waitState("orders", "o1", client.StateDelivered, 10*time.Second)
	hits := rcv.all()
	if len(hits) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(hits))
	}
	traceID := app.SpanContext().TraceID()

	// The worker ends an attempt's span before it records the outcome.
	var create, claim sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			create = s
		case trace.SpanKindClient:
			attempts = append(attempts, s)
		case trace.SpanKindConsumer:
			if slices.ContainsFunc(s.Links(), func(l sdktrace.Link) bool { return l.SpanContext.TraceID() == traceID }) {
				claim = s
			}
		}
	}
	if create == nil || create.Name() != "create orders" || create.SpanContext().TraceID() != traceID ||
		create.Parent().SpanID() != app.SpanContext().SpanID() {
		t.Fatalf("create span %v: want \"create orders\", a child of the application's span", create)
	}
	if v, _ := attrOf(create, "messaging.message.id"); v.AsString() != "o1" {
		t.Errorf("create span's messaging.message.id %q", v.AsString())
	}
	if claim == nil || !slices.ContainsFunc(claim.Links(), func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == create.SpanContext().SpanID() }) {
		t.Errorf("no claim span links the create")
	}
	slices.SortFunc(attempts, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(attempts))
	}
	for i, s := range attempts {
		if s.SpanContext().TraceID() != traceID || s.Parent().SpanID() != create.SpanContext().SpanID() {
			t.Errorf("attempt %d: trace %s parent %s, want trace %s under the create %s", i+1, s.SpanContext().TraceID(),
				s.Parent().SpanID(), traceID, create.SpanContext().SpanID())
		}
		if !slices.ContainsFunc(s.Links(), func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == create.SpanContext().SpanID() }) {
			t.Errorf("attempt %d has no link to the create", i+1)
		}
		want := map[attribute.Key]any{"http.request.method": "POST", "http.response.status_code": int64([]int{503, 200}[i]),
			"kairos.attempt": int64(i + 1), "messaging.message.id": "o1", "messaging.destination.name": "orders",
			"server.address": "127.0.0.1", "kairos.outcome": []string{"retry", "delivered"}[i]}
		for k, v := range want {
			if got, ok := attrOf(s, k); !ok || got.AsInterface() != v {
				t.Errorf("attempt %d: %s = %v, want %v", i+1, k, got.AsInterface(), v)
			}
		}
		if u, _ := attrOf(s, "url.full"); strings.Contains(u.AsString(), "s3cret") || !strings.Contains(u.AsString(), "/hook?token=REDACTED") {
			t.Errorf("attempt %d: url.full %q: want the query redacted", i+1, u.AsString())
		}
		late, ok := attrOf(s, "kairos.lateness_ms")
		if !ok || late.AsFloat64() < -2 {
			t.Errorf("attempt %d: kairos.lateness_ms %v", i+1, late.AsFloat64())
		}
		t.Logf("attempt %d: %s, lateness %.3f ms", i+1, s.Status().Code, late.AsFloat64())
		// The receiver saw the attempt's span context, and the tracestate.
		got := receivedContext(hits[i])
		if got.TraceID() != traceID || got.SpanID() != s.SpanContext().SpanID() || got.TraceState().Get("vendor") != "abc" {
			t.Errorf("attempt %d: the callback carried %s/%s tracestate %q, want %s/%s and vendor=abc", i+1,
				got.TraceID(), got.SpanID(), got.TraceState(), traceID, s.SpanContext().SpanID())
		}
	}
	if attempts[0].Status().Code != codes.Error {
		t.Errorf("the 503 attempt's span status is %v, want Error", attempts[0].Status().Code)
	}
	if v, _ := attrOf(attempts[0], "error.type"); v.AsString() != "503" {
		t.Errorf("the 503 attempt's error.type %q", v.AsString())
	}
}

// A kairos that does not trace still keeps the trace context a create
// carried and sends it with every attempt of each job, batches included:
// the receiver joins the scheduling trace.
func TestTraceContextForwardedWithoutTracing(t *testing.T) {
	t.Parallel()
	e := startEngine(t, engineOpts{allowPrivate: true})
	rcv := newReceiver(t, nil)
	e.putTopic("orders", rcv.URL)
	c := e.c.With(client.WithHTTPClient(&http.Client{Transport: propagating{http.DefaultTransport}}))
	tp := sdktrace.NewTracerProvider() // the application's own tracing
	defer tp.Shutdown(context.Background())
	ctx, app := appSpan(t, tp)
	defer app.End()
	if _, err := c.CreateJobs(ctx, "orders", []client.JobRequest{{ID: "b1"}, {ID: "b2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateJob(context.Background(), "orders", client.JobRequest{ID: "plain"}); err != nil {
		t.Fatal(err)
	}
	hits := rcv.waitHits(t, 3, 10*time.Second)
	for _, h := range hits {
		got := receivedContext(h)
		switch id := h.Header.Get("Kairos-Job-Id"); id {
		case "plain":
			if got.IsValid() {
				t.Errorf("a job created without trace context sent %s", h.Header.Get("traceparent"))
			}
		default:
			if !got.Equal(trace.SpanContextFromContext(ctx).WithRemote(true)) {
				t.Errorf("job %s sent traceparent %q tracestate %q, want the create request's %s", id,
					h.Header.Get("traceparent"), h.Header.Get("tracestate"), app.SpanContext().SpanID())
			}
		}
	}
}
