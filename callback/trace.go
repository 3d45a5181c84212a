package callback

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/tracing"
)

// startAttempt starts the span of an attempt at j: an HTTP client span,
// a child of the job's create (so the attempts of a job are siblings) with
// a link to it, and the attempt's lateness. The context it returns carries
// the trace context the callback sends.
func (w *Worker) startAttempt(ctx context.Context, j kairos.Job, start time.Time) (context.Context, trace.Span) {
	ctx = tracing.Extract(ctx, j.TraceParent, j.TraceState)
	method := j.Method
	if method == "" {
		method = http.MethodPost
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start)}
	if created := trace.SpanContextFromContext(ctx); created.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: created,
			Attributes: []attribute.KeyValue{attribute.String("kairos.link", "create")}}))
	}
	ctx, span := w.tracer.Start(ctx, method, opts...)
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(method),
		semconv.MessagingSystemKey.String(tracing.System),
		semconv.MessagingDestinationName(j.Topic),
		semconv.MessagingMessageID(j.ID),
		attribute.String("kairos.tenant", j.Tenant),
		attribute.Int("kairos.attempt", j.Attempts),
		attribute.Float64("kairos.lateness_ms", float64(start.Sub(DueAt(j)).Microseconds())/1000),
	}
	if j.Attempts > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(j.Attempts-1))
	}
	if sid, ok := kairos.ScheduleOf(j.ID); ok {
		attrs = append(attrs, attribute.String("kairos.schedule_id", sid))
	}
	if u, err := url.Parse(j.CallbackURL); err == nil {
		attrs = append(attrs, semconv.URLFull(redacted(u)), semconv.ServerAddress(u.Hostname()))
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		} else if u.Scheme == "https" {
			attrs = append(attrs, semconv.ServerPort(443))
		} else {
			attrs = append(attrs, semconv.ServerPort(80))
		}
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endAttempt ends an attempt's span with its outcome: the HTTP status or
// error, and what becomes of the job (kairos.outcome: delivered, retry or
// dead).
func endAttempt(span trace.Span, res Result, o kairos.Outcome) {
	if span.IsRecording() {
		if res.Status != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(res.Status))
		}
		outcome := "retry"
		switch o {
		case kairos.OutcomeDelivered:
			outcome = "delivered"
		case kairos.OutcomeDead:
			outcome = "dead"
		}
		span.SetAttributes(attribute.String("kairos.outcome", outcome))
		switch {
		case res.Err != nil:
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(res.Err)))
			span.SetStatus(codes.Error, res.Err.Error())
		case !res.OK():
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(res.Status)))
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}

// injectTrace sets the callback's traceparent and tracestate to ctx's span
// context, over any the job's headers set; nothing when it has none.
func injectTrace(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		h.Del("Traceparent")
		h.Del("Tracestate")
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// errorType names a transport error for error.type: timeout, a refused
// or blocked address, or _OTHER.
func errorType(err error) string {
	var ne net.Error
	var blocked *BlockedAddressError
	switch {
	case isTimeout(err):
		return "timeout"
	case errors.As(err, &blocked):
		return "blocked_address"
	case errors.As(err, &ne):
		return "network"
	}
	return "_OTHER"
}

// redacted is u without its user info and with its query values replaced,
// as the semantic conventions ask of url.full: a callback URL may carry a
// token.
func redacted(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// tracePop records a pop that took jobs from ready lists as a
// consumer span ("receive") linking each job's create; pops that take
// none leave no span.
func (w *Worker) tracePop(ctx context.Context, began time.Time, cs []kairos.Claimed) {
	_, span := w.tracer.Start(ctx, "receive", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(began),
		trace.WithNewRoot())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingOperationTypeReceive,
		semconv.MessagingOperationName("receive"), semconv.MessagingBatchMessageCount(len(cs)))
	for _, c := range cs {
		if sc := tracing.SpanContext(c.Job.TraceParent, c.Job.TraceState); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(c.Job.ID)}})
		}
	}
	span.End()
}
