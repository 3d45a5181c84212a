package api

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kairos-sh/kairos/internal/tracing"
)

// startCreate starts the producer span of a create of n jobs on topic, a
// child of the trace context the request carries (traceparent,
// tracestate), and returns the trace context the jobs keep and send with
// every attempt: the span's, or the request's as it came when kairos does
// not trace. id is the job's id for a single create.
func (s *Server) startCreate(r *http.Request, tenant, topic, id string, n int) (traceparent, tracestate string, end func(error)) {
	ctx := tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(ctx, "create "+topic, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() { // no attributes to build on a create kairos does not trace
		span.SetAttributes(semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingOperationTypeCreate,
			semconv.MessagingOperationName("create"), semconv.MessagingDestinationName(topic), attribute.String("kairos.tenant", tenant))
		if id != "" {
			span.SetAttributes(semconv.MessagingMessageID(id))
		}
		if n != 1 {
			span.SetAttributes(semconv.MessagingBatchMessageCount(n))
		}
	}
	traceparent, tracestate = tracing.Inject(ctx)
	return traceparent, tracestate, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
