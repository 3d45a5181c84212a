package tracing

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf: POST
// application/x-protobuf to the traces endpoint. It is the part of
// otlptracehttp kairos uses, written here because that package pulls in
// gRPC (its configuration and the collector service's generated code import
// it), which about doubled what `go build ./cmd/kairos` downloads. The body
// is a TracesData message, which the OTLP specification keeps
// wire-compatible with ExportTraceServiceRequest.
type exporter struct {
	url      string
	headers  http.Header
	gzip     bool
	timeout  time.Duration
	client   *http.Client
	retryMax int           // tries after the first, for 429, 502, 503, 504 and transport errors
	backoff  time.Duration // wait before the first retry; it doubles
}

// otlpEnv returns the traces-specific variable OTEL_EXPORTER_OTLP_TRACES_<name>,
// or else the general OTEL_EXPORTER_OTLP_<name>.
func otlpEnv(getenv func(string) string, name string) string {
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return getenv("OTEL_EXPORTER_OTLP_" + name)
}

// newExporter reads the standard OTEL_EXPORTER_OTLP_* variables (their
// TRACES_ forms first): ENDPOINT (the general one gets /v1/traces added;
// default http://localhost:4318), HEADERS (k=v pairs, comma-separated,
// values percent-decoded), TIMEOUT (milliseconds, default 10000),
// COMPRESSION (gzip or none), CERTIFICATE (PEM roots), CLIENT_CERTIFICATE
// and CLIENT_KEY (PEM, for mutual TLS).
func newExporter(getenv func(string) string) (*exporter, error) {
	e := &exporter{headers: http.Header{}, timeout: 10 * time.Second, retryMax: 4, backoff: 500 * time.Millisecond}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		e.url = v
	} else {
		base := cmp.Or(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "http://localhost:4318")
		e.url = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	if u, err := url.Parse(e.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP traces endpoint %q: want an http:// or https:// URL, such as http://collector:4318", e.url)
	}
	if v := otlpEnv(getenv, "HEADERS"); v != "" {
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if !ok || k == "" || err != nil {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value (values percent-encoded)", pair)
			}
			e.headers.Set(k, dec)
		}
	}
	if v := otlpEnv(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: want milliseconds, such as 10000", v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := otlpEnv(getenv, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%q: use gzip or none", v)
	}
	tlsConf, err := otlpTLS(getenv)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsConf
	e.client = &http.Client{Transport: t}
	return e, nil
}

// otlpTLS is the TLS configuration the CERTIFICATE, CLIENT_CERTIFICATE
// and CLIENT_KEY variables ask for; nil when none is set.
func otlpTLS(getenv func(string) string) (*tls.Config, error) {
	ca, cert, key := otlpEnv(getenv, "CERTIFICATE"), otlpEnv(getenv, "CLIENT_CERTIFICATE"), otlpEnv(getenv, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE %s: no PEM certificate in it", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: set both or neither")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTLP client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// ExportSpans sends spans in one request, retrying a 429, 502, 503 or 504
// and a transport error with a doubling wait (a Retry-After within the
// timeout is honoured) while ctx lasts.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(tracesData(spans))
	if err != nil {
		return fmt.Errorf("OTLP export: encode: %w", err)
	}
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("OTLP export: gzip: %w", err)
		}
		body = b.Bytes()
	}
	wait := e.backoff
	for try := 0; ; try++ {
		retry, after, err := e.send(ctx, body)
		if err == nil || !retry || try >= e.retryMax {
			return err
		}
		if after > 0 && after <= e.timeout {
			wait = after
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// send makes one request; retry says whether another may succeed, after
// how long the collector asked to wait (0: not said).
func (e *exporter) send(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("OTLP export: %w", err)
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "kairos OTLP/HTTP exporter")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded), 0, fmt.Errorf("OTLP export to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("OTLP export to %s: %s: %s", e.url, resp.Status, bytes.TrimSpace(snippet))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// Shutdown releases idle connections; spans still queued are the batch
// processor's to flush before it calls this.
func (e *exporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// tracesData groups spans by resource and instrumentation scope, in the
// order they come, as OTLP wants them.
func tracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type scopeKey struct{ name, version, schema string }
	out := &tracepb.TracesData{}
	resIndex := map[attribute.Distinct]*tracepb.ResourceSpans{}
	scopeIndex := map[attribute.Distinct]map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		var rk attribute.Distinct
		if res != nil {
			rk = res.Equivalent()
		}
		rs := resIndex[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
			if res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaUrl = res.SchemaURL()
			}
			resIndex[rk] = rs
			scopeIndex[rk] = map[scopeKey]*tracepb.ScopeSpans{}
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		is := s.InstrumentationScope()
		sk := scopeKey{is.Name, is.Version, is.SchemaURL}
		ss := scopeIndex[rk][sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: is.Name, Version: is.Version,
				Attributes: keyValues(is.Attributes.ToSlice())}, SchemaUrl: is.SchemaURL}
			scopeIndex[rk][sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	return out
}

func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   spanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(max(s.DroppedAttributes(), 0)),
		DroppedEventsCount:     uint32(max(s.DroppedEvents(), 0)),
		DroppedLinksCount:      uint32(max(s.DroppedLinks(), 0)),
		Flags:                  uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK),
	}
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
		if parent.IsRemote() {
			p.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{Name: ev.Name, TimeUnixNano: unixNano(ev.Time),
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(max(ev.DroppedAttributeCount, 0))})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		pl := &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: uint32(max(l.DroppedAttributeCount, 0)),
			Flags: uint32(l.SpanContext.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)}
		if l.SpanContext.IsRemote() {
			pl.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
		p.Links = append(p.Links, pl)
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	case codes.Error:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	}
	return p
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func array[T any](vs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = anyValue(value(v))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
