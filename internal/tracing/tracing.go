// Package tracing is kairos's OpenTelemetry: the tracer provider that
// `kairos serve` sets up from the standard OTEL_* environment variables
// (off unless an OTLP endpoint is named), and the spans of a job's life:
// its create (producer), the claim that takes it (consumer, linking each
// job it takes) and each delivery attempt (an HTTP client span, a child of
// the create, with a link to it). A job keeps the W3C trace context of its
// create (traceparent, tracestate) and every attempt sends it on, so the
// receiver's span joins the trace that scheduled the job, traced here or
// not.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of kairos's spans.
const Scope = "github.com/kairos-sh/kairos"

// System is the messaging.system of kairos's spans.
const System = "kairos"

// Propagator carries trace context as W3C traceparent and tracestate.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is named (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is otlp, and
// neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns them off.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Check reports what the environment asks of tracing that kairos cannot
// do: an exporter other than otlp, or an OTLP protocol other than
// http/protobuf. kairos sends traces over OTLP/HTTP only (the gRPC exporter
// would double the binary's dependencies); every collector that takes
// OTLP/gRPC takes OTLP/HTTP too, usually on port 4318.
func Check(getenv func(string) string) error {
	if !Enabled(getenv) {
		return nil
	}
	if v := strings.ToLower(getenv("OTEL_TRACES_EXPORTER")); v != "" && v != "otlp" {
		return fmt.Errorf("OTEL_TRACES_EXPORTER=%q: kairos exports traces with otlp (or none)", v)
	}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := getenv(name)
	if protocol == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = getenv(name)
	}
	switch protocol {
	case "", "http/protobuf":
		return nil
	case "grpc":
		return fmt.Errorf("%s=grpc: kairos sends traces over OTLP/HTTP only; unset %s (or set it to http/protobuf) and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP endpoint, such as http://collector:4318", name, name)
	default:
		return fmt.Errorf("%s=%q: use http/protobuf (the default); kairos sends traces over OTLP/HTTP only", name, protocol)
	}
}

// Setup returns the tracer provider kairos traces with and the function
// that flushes and stops it. With traces off it is a no-op provider, and
// kairos still stores and forwards the trace context it is given. With
// them on, spans go in batches to an OTLP/HTTP exporter that reads the
// standard variables from getenv (endpoint, headers, timeout, compression,
// certificates: newExporter; Check refuses any protocol but http/protobuf), the resource names the
// service (OTEL_SERVICE_NAME, default kairos; OTEL_RESOURCE_ATTRIBUTES)
// and the sampler follows OTEL_TRACES_SAMPLER (default: parent-based,
// always on).
func Setup(ctx context.Context, getenv func(string) string, version string) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled(getenv) {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	if err := Check(getenv); err != nil {
		return nil, nil, err
	}
	exp, err := newExporter(getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("kairos"), semconv.ServiceVersion(version)))
	if err == nil {
		var env *resource.Resource
		if env, err = resource.New(ctx, resource.WithFromEnv()); err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// fieldsCarrier reads and writes trace context as a job's two fields.
type fieldsCarrier struct{ parent, state *string }

func (c fieldsCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return *c.parent
	case "tracestate":
		return *c.state
	}
	return ""
}

func (c fieldsCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		*c.parent = value
	case "tracestate":
		*c.state = value
	}
}

func (c fieldsCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Inject returns the W3C trace context of ctx's span, "" when it has none.
func Inject(ctx context.Context) (traceparent, tracestate string) {
	Propagator.Inject(ctx, fieldsCarrier{&traceparent, &tracestate})
	return traceparent, tracestate
}

// Extract returns ctx with the remote span context a job stored; ctx as
// it is when the job has none (or an invalid one).
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return Propagator.Extract(ctx, fieldsCarrier{&traceparent, &tracestate})
}

// SpanContext returns the span context a job stored; invalid when none.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), traceparent, tracestate))
}
