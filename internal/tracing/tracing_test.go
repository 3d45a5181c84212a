package tracing

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, true},
	} {
		if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestSetupRefusesWhatItCannotExport(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		if _, _, err := Setup(context.Background(), func(k string) string { return env[k] }, "test"); err == nil {
			t.Errorf("Setup(%v) accepted it", env)
		}
	}
}

// kairos has no OTLP/gRPC exporter: a protocol of grpc is refused with a
// message that names the variable and the way out (the HTTP endpoint).
func TestCheckRefusesGRPCNamingTheHTTPEndpoint(t *testing.T) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", name: "grpc"}
		err := Check(func(k string) string { return env[k] })
		if err == nil {
			t.Fatalf("Check accepted %s=grpc", name)
		}
		for _, want := range []string{name + "=grpc", "OTLP/HTTP", "OTEL_EXPORTER_OTLP_ENDPOINT", "4318"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check(%s=grpc) = %q, want it to say %q", name, err, want)
			}
		}
	}
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, // no endpoint: tracing is off, nothing to refuse
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
	} {
		if err := Check(func(k string) string { return env[k] }); err != nil {
			t.Errorf("Check(%v) = %v, want nil", env, err)
		}
	}
}

// With an endpoint named, spans reach an OTLP/HTTP receiver, with the
// service's name, when the provider shuts down.
func TestSetupExportsToOTLPOverHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		body = append(body, b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "kairos-under-test")
	tp, shutdown, err := Setup(context.Background(), os.Getenv, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer(Scope).Start(context.Background(), "create orders", trace.WithSpanKind(trace.SpanKindProducer))
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "POST /v1/traces application/x-protobuf" {
		t.Fatalf("receiver got %v", paths)
	}
	for _, s := range []string{"create orders", "kairos-under-test", "v1.2.3", Scope} {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("the export does not hold %q", s)
		}
	}
}

func TestInjectExtractRoundTrip(t *testing.T) {
	const tp = "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"
	ctx := Extract(context.Background(), tp, "vendor=abc")
	p, s := Inject(ctx)
	if p != tp || s != "vendor=abc" {
		t.Errorf("round trip: %q %q", p, s)
	}
	if p, s := Inject(Extract(context.Background(), "garbage", "")); p != "" || s != "" {
		t.Errorf("an invalid traceparent came back as %q %q", p, s)
	}
	if SpanContext("", "").IsValid() {
		t.Error("no traceparent is a valid span context")
	}
}
