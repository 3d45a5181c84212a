package tracing

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver for tests: it decodes each request
// as the collector service's ExportTraceServiceRequest (what a real
// collector reads) and answers with the statuses queued in fail first.
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []*http.Request
	got     []*coltracepb.ExportTraceServiceRequest
	fail    []int
	decodeE error
}

func newCollector(t *testing.T, fail ...int) *collector {
	c := &collector{fail: fail}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reqs = append(c.reqs, r)
		if len(c.fail) > 0 {
			code := c.fail[0]
			c.fail = c.fail[1:]
			w.Header().Set("Retry-After", "0")
			http.Error(w, "try later", code)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				c.decodeE = err
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			c.decodeE = err
		}
		c.got = append(c.got, &req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

// export runs two spans, a producer with a remote parent, attributes of
// each type, an event, a link and an error status, and a child of it,
// through an exporter made from env.
func export(t *testing.T, env map[string]string) (trace.SpanContext, error) {
	t.Helper()
	e, err := newExporter(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	e.backoff = time.Millisecond
	res := resource.NewSchemaless(attribute.String("service.name", "kairos-test"))
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(spanSink{&spans}))
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, Remote: true})
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})
	ctx, span := tp.Tracer(Scope, trace.WithInstrumentationVersion("v9")).Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "create orders",
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(trace.Link{SpanContext: link, Attributes: []attribute.KeyValue{attribute.String("kairos.link", "create")}}))
	span.SetAttributes(attribute.Bool("b", true), attribute.Int("i", 42), attribute.Float64("f", 1.5), attribute.String("s", "x"),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}))
	span.AddEvent("held", trace.WithAttributes(attribute.String("why", "rate")))
	span.SetStatus(codes.Error, "boom")
	_, child := tp.Tracer(Scope).Start(ctx, "POST", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	span.End()
	return span.SpanContext(), e.ExportSpans(context.Background(), spans)
}

type spanSink struct{ spans *[]sdktrace.ReadOnlySpan }

func (s spanSink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s spanSink) OnEnd(sp sdktrace.ReadOnlySpan)                  { *s.spans = append(*s.spans, sp) }
func (s spanSink) Shutdown(context.Context) error                  { return nil }
func (s spanSink) ForceFlush(context.Context) error                { return nil }

// TestExporterSendsWhatACollectorReads: the body decodes as the collector
// service's request, with the resource, the scope, both spans and every
// field kairos sets; the headers and the path are the ones asked for.
func TestExporterSendsWhatACollectorReads(t *testing.T) {
	c := newCollector(t)
	sc, err := export(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret,x-team = billing"})
	if err != nil {
		t.Fatal(err)
	}
	if c.decodeE != nil || len(c.got) != 1 {
		t.Fatalf("collector decoded %d requests, err %v", len(c.got), c.decodeE)
	}
	r := c.reqs[0]
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Api-Key") != "s ecret" || r.Header.Get("X-Team") != "billing" {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	rs := c.got[0].ResourceSpans
	if len(rs) != 1 || len(rs[0].ScopeSpans) != 2 {
		t.Fatalf("resource spans %v", rs)
	}
	if a := rs[0].Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "kairos-test" {
		t.Errorf("resource %v", a)
	}
	var producer *tracepb.Span
	for _, ss := range rs[0].ScopeSpans {
		if ss.Scope.Name != Scope {
			t.Errorf("scope %v", ss.Scope)
		}
		for _, s := range ss.Spans {
			if s.Name == "create orders" {
				producer = s
				if ss.Scope.Version != "v9" {
					t.Errorf("scope version %q", ss.Scope.Version)
				}
			}
		}
	}
	if producer == nil {
		t.Fatal("no producer span")
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	if string(producer.TraceId) != string(tid[:]) || string(producer.SpanId) != string(sid[:]) || string(producer.ParentSpanId) != string([]byte{4, 5, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("ids %x %x parent %x", producer.TraceId, producer.SpanId, producer.ParentSpanId)
	}
	if producer.Kind != tracepb.Span_SPAN_KIND_PRODUCER || producer.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || producer.Status.GetMessage() != "boom" {
		t.Errorf("kind %v status %v", producer.Kind, producer.Status)
	}
	if producer.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK) == 0 || producer.Flags&0xff != 1 {
		t.Errorf("flags %b: want sampled, parent remote", producer.Flags)
	}
	if producer.StartTimeUnixNano == 0 || producer.EndTimeUnixNano < producer.StartTimeUnixNano {
		t.Errorf("times %d %d", producer.StartTimeUnixNano, producer.EndTimeUnixNano)
	}
	attrs := map[string]string{}
	for _, kv := range producer.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, want := range map[string]string{"b": "bool_value:true", "i": "int_value:42", "f": "double_value:1.5", "s": `string_value:"x"`,
		"ss": `array_value:{values:{string_value:"a"} values:{string_value:"b"}}`, "is": `array_value:{values:{int_value:1} values:{int_value:2}}`} {
		if got := strings.Join(strings.Fields(attrs[k]), " "); got != want {
			t.Errorf("attribute %s = %s, want %s", k, got, want)
		}
	}
	if len(producer.Events) != 1 || producer.Events[0].Name != "held" || len(producer.Links) != 1 || producer.Links[0].Attributes[0].Value.GetStringValue() != "create" {
		t.Errorf("events %v links %v", producer.Events, producer.Links)
	}
}

// TestExporterOptions: the traces endpoint is taken as it is, gzip is
// sent when asked, and a collector that is busy is tried again.
func TestExporterOptions(t *testing.T) {
	c := newCollector(t, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	if _, err := export(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.URL + "/custom/path", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://elsewhere:1",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}); err != nil {
		t.Fatal(err)
	}
	if len(c.reqs) != 3 || c.reqs[2].URL.Path != "/custom/path" || c.reqs[2].Header.Get("Content-Encoding") != "gzip" || len(c.got) != 1 || c.decodeE != nil {
		t.Errorf("%d requests, %d decoded (%v)", len(c.reqs), len(c.got), c.decodeE)
	}

	bad := newCollector(t, http.StatusBadRequest)
	if _, err := export(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": bad.URL}); err == nil || !strings.Contains(err.Error(), "400") || len(bad.reqs) != 1 {
		t.Errorf("a 400: %v after %d requests; want the error, not retried", err, len(bad.reqs))
	}
}

func TestNewExporterRefusesBadSettings(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://collector:4317"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/file.pem"},
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/a.pem"},
	} {
		if _, err := newExporter(func(k string) string { return env[k] }); err == nil {
			t.Errorf("newExporter(%v) accepted it", env)
		}
	}
	e, err := newExporter(func(string) string { return "" })
	if err != nil || e.url != "http://localhost:4318/v1/traces" || e.timeout != 10*time.Second {
		t.Errorf("defaults: %+v, %v", e, err)
	}
}

// TestExporterStopsWithItsContext: retries end when the export's context does.
func TestExporterStopsWithItsContext(t *testing.T) {
	c := newCollector(t, 503, 503, 503, 503, 503)
	e, err := newExporter(func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL}[k] })
	if err != nil {
		t.Fatal(err)
	}
	e.backoff = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanSink{&spans}))
	_, s := tp.Tracer(Scope).Start(context.Background(), "x")
	s.End()
	if err := e.ExportSpans(ctx, spans); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's deadline", err)
	}
}
