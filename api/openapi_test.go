package api

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/spectest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// spec is openapi.yaml, loaded and validated once per test binary.
type spec struct {
	doc    *openapi3.T
	router routers.Router
}

// mustSpec returns the loaded spec or stops the test.
func mustSpec(tb testing.TB) *spec {
	tb.Helper()
	s := spectest.Must(tb)
	return &spec{doc: s.Doc, router: s.Router}
}

func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	s := mustSpec(t)
	if got := s.doc.OpenAPI; got != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", got)
	}
}

// specOperations lists "METHOD /path" for every operation in the spec.
func specOperations(doc *openapi3.T) []string {
	var out []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// routedOperations lists "METHOD /path" for every route the chi router
// serves, with the trailing slash chi gives r.Route("/") routes removed.
func routedOperations(tb testing.TB, h http.Handler) []string {
	tb.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		tb.Fatalf("api.New returned %T, not a chi router", h)
	}
	seen := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		route = strings.Replace(route, "/*", "/{path}", 1) // chi's catch-all is the spec's {path}
		seen[method+" "+route] = true
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIRoutes checks that the spec and the router agree on every
// method and path, and keeps the route list as a golden file.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	s := mustSpec(t)
	h := New(nil, auth.New([]byte("x"), nil), Config{})
	routed := routedOperations(t, h)
	if d := cmp.Diff(specOperations(s.doc), routed); d != "" {
		t.Errorf("openapi.yaml operations (-) versus routed operations (+):\n%s", d)
	}
	golden := filepath.Join("testdata", "routes.golden")
	got := []byte(strings.Join(routed, "\n") + "\n")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("routes changed (-%s +routed); run go test -update if this is intended:\n%s", golden, d)
	}
}

// TestOpenAPIOperations checks the promises every operation makes: an id,
// auth on /v1 only, the error responses its handler can give, and examples.
func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	s := mustSpec(t)
	ids := map[string]string{}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", name)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s: operationId %q is also used by %s", name, op.OperationID, other)
			}
			ids[op.OperationID] = name
			v1 := strings.HasPrefix(path, "/v1/")
			switch {
			case v1 && op.Security != nil:
				t.Errorf("%s: overrides the document's bearerAuth security", name)
			case !v1 && (op.Security == nil || len(*op.Security) != 0):
				t.Errorf("%s: should say security: [] (no auth)", name)
			}
			if !v1 {
				continue
			}
			want := []string{"400", "401", "403", "500", "503"}
			if op.RequestBody != nil {
				want = append(want, "413", "415")
				if n := len(op.RequestBody.Value.Content.Get("application/json").Examples); n == 0 {
					t.Errorf("%s: request body has no examples", name)
				}
			}
			if strings.Contains(path, "{topic}") && !(method == http.MethodPut && path == "/v1/topics/{topic}") {
				want = append(want, "404")
			}
			for _, code := range want {
				if op.Responses.Value(code) == nil {
					t.Errorf("%s: no %s response", name, code)
				}
			}
			var params []string
			for _, p := range op.Parameters {
				params = append(params, p.Value.Name)
			}
			for _, p := range item.Parameters {
				params = append(params, p.Value.Name)
			}
			// a tick acts on every tenant; a token's tenant is in the body
			if !slices.Contains(params, "tenant") && path != "/v1/tick" && path != "/v1/tokens" {
				t.Errorf("%s: no tenant query parameter", name)
			}
		}
	}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				for ct, mt := range r.Value.Content {
					if ct == "application/yaml" {
						continue
					}
					if mt.Example == nil && len(mt.Examples) == 0 {
						t.Errorf("%s %s: %s response (%s) has no example", method, path, code, ct)
					}
				}
			}
		}
	}
}

// TestOpenAPIExamples validates every example in the spec against its
// schema: request bodies as requests, responses as responses, and the
// examples of parameters and of schemas and their properties.
func TestOpenAPIExamples(t *testing.T) {
	t.Parallel()
	s := mustSpec(t)
	n := 0
	check := func(where string, schema *openapi3.SchemaRef, value any, opts ...openapi3.SchemaValidationOption) {
		t.Helper()
		n++
		if schema == nil || schema.Value == nil {
			t.Errorf("%s: example without a schema", where)
			return
		}
		if err := schema.Value.VisitJSON(value, append(opts, openapi3.MultiErrors())...); err != nil {
			t.Errorf("%s: example does not match its schema: %v", where, err)
		}
	}
	media := func(where string, content openapi3.Content, opts ...openapi3.SchemaValidationOption) {
		for ct, mt := range content {
			if mt.Example != nil {
				check(where+" "+ct+" example", mt.Schema, mt.Example, opts...)
			}
			for name, ex := range mt.Examples {
				check(where+" "+ct+" examples."+name, mt.Schema, ex.Value.Value, opts...)
			}
		}
	}
	params := func(where string, ps openapi3.Parameters) {
		for _, p := range ps {
			if p.Value.Example != nil {
				check(where+" parameter "+p.Value.Name, p.Value.Schema, p.Value.Example, openapi3.VisitAsRequest())
			}
		}
	}
	for path, item := range s.doc.Paths.Map() {
		params(path, item.Parameters)
		for method, op := range item.Operations() {
			where := method + " " + path
			params(where, op.Parameters)
			if op.RequestBody != nil {
				media(where+" request", op.RequestBody.Value.Content, openapi3.VisitAsRequest())
			}
			for code, r := range op.Responses.Map() {
				media(where+" "+code, r.Value.Content, openapi3.VisitAsResponse())
			}
		}
	}
	for name, r := range s.doc.Components.Responses {
		media("components.responses."+name, r.Value.Content, openapi3.VisitAsResponse())
	}
	for name, p := range s.doc.Components.Parameters {
		params("components.parameters."+name, openapi3.Parameters{p})
	}
	var walk func(where string, sr *openapi3.SchemaRef)
	walk = func(where string, sr *openapi3.SchemaRef) {
		if sr == nil || sr.Value == nil {
			return
		}
		if sr.Value.Example != nil {
			check(where, sr, sr.Value.Example)
		}
		for prop, p := range sr.Value.Properties {
			walk(where+"."+prop, p)
		}
		if sr.Value.Items != nil {
			walk(where+"[]", sr.Value.Items)
		}
	}
	for name, sr := range s.doc.Components.Schemas {
		walk("components.schemas."+name, sr)
	}
	if n < 50 {
		t.Errorf("checked only %d examples; the spec should carry more", n)
	}
}

// TestOpenAPIServed checks GET /openapi.yaml serves the embedded spec with no auth.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	res := e.do(t, "GET", "/openapi.yaml", "", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type = %q, want application/yaml", ct)
	}
	if !bytes.Equal(res.Body, kairos.OpenAPI) {
		t.Errorf("served document differs from kairos.OpenAPI (%d versus %d bytes)", len(res.Body), len(kairos.OpenAPI))
	}
}

// specCheck is the spec's verdict on one exchange.
type specCheck struct {
	RequestErr error // nil when the spec accepts the request
}

// validateExchange checks a request against the spec, and the server's
// response to it. A response that breaks the spec fails the test; the
// request's verdict is returned, for the caller to judge.
func validateExchange(tb testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) specCheck {
	tb.Helper()
	s := mustSpec(tb)
	// Validate a copy: ValidateRequest reads the body and may set defaults.
	vreq := req.Clone(context.Background())
	vreq.Body = nopBody(reqBody)
	route, params, err := s.router.FindRoute(vreq)
	if err != nil {
		tb.Errorf("%s %s: not in openapi.yaml (%v) but answered %d", req.Method, req.URL.Path, err, status)
		return specCheck{RequestErr: err}
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{SkipSettingDefaults: true, MultiError: true, AuthenticationFunc: bearerPresent},
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		tb.Errorf("%s %s: response %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL, status, err, truncate(body))
	}
	return specCheck{RequestErr: reqErr}
}

// bearerPresent is the spec's view of bearerAuth: a Bearer credential is
// present. Whether it is valid is the server's business.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	if scheme, tok, ok := strings.Cut(h, " "); !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return errors.New("no bearer token")
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); r.FailNow() }

// TestValidateExchange shows that the spec check catches responses and
// requests that drift from openapi.yaml.
func TestValidateExchange(t *testing.T) {
	t.Parallel()
	jobJSON := `{"id":"j1","topic":"orders","tenant":"acme","state":"scheduled","run_at":"2026-11-21T10:00:00.000Z","created_at":"2026-11-21T10:00:00.000Z","attempts":0}`
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		status     int
		ctype      string // the Content-Type, then optionally "\n" and one more "Name: value" header
		resp       string
		respOK     bool
		requestErr bool
	}{
		{"valid", "GET", "/v1/topics/orders/jobs/j1", "", 200, "application/json", jobJSON, true, false},
		{"unknown response field", "GET", "/v1/topics/orders/jobs/j1", "", 200, "application/json",
			strings.Replace(jobJSON, `"attempts":0`, `"attempts":0,"colour":"red"`, 1), false, false},
		{"missing response field", "GET", "/v1/topics/orders/jobs/j1", "", 200, "application/json",
			strings.Replace(jobJSON, `,"attempts":0`, ``, 1), false, false},
		{"bad state", "GET", "/v1/topics/orders/jobs/j1", "", 200, "application/json",
			strings.Replace(jobJSON, `scheduled`, `waiting`, 1), false, false},
		{"undocumented status", "GET", "/v1/topics/orders/jobs/j1", "", 418, "application/json", `{}`, false, false},
		{"problem as plain JSON", "GET", "/v1/topics/orders/jobs/j1", "", 404, "application/json",
			`{"type":"urn:kairos:problem:not-found","title":"Not Found","status":404}`, false, false},
		{"problem with unknown type", "GET", "/v1/topics/orders/jobs/j1", "", 404, "application/problem+json",
			`{"type":"about:blank","title":"Not Found","status":404}`, false, false},
		{"bad request body", "POST", "/v1/topics/orders/jobs", `{"delay":"1m","run_at":"2026-11-21T10:00:00Z"}`, 201, "application/json", jobJSON, true, true},
		{"bad path parameter", "GET", "/v1/topics/orders/jobs/-j1", "", 404, "application/problem+json",
			`{"type":"urn:kairos:problem:not-found","title":"Not Found","status":404}`, true, true},
		{"401 with its challenge", "GET", "/v1/topics", "", 401, "application/problem+json\nWWW-Authenticate: Bearer realm=\"kairos\"",
			`{"type":"urn:kairos:problem:unauthorized","title":"Unauthorized","status":401,"detail":"token has expired"}`, true, false},
		{"401 without its challenge", "GET", "/v1/topics", "", 401, "application/problem+json",
			`{"type":"urn:kairos:problem:unauthorized","title":"Unauthorized","status":401,"detail":"token has expired"}`, false, false},
		{"503 without Retry-After", "GET", "/v1/topics", "", 503, "application/problem+json",
			`{"type":"urn:kairos:problem:unavailable","title":"Service Unavailable","status":503}`, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer x")
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			h := http.Header{}
			ct, extra, _ := strings.Cut(tc.ctype, "\n")
			h.Set("Content-Type", ct)
			if name, value, ok := strings.Cut(extra, ": "); ok {
				h.Set(name, value)
			}
			rec := &recorder{TB: t}
			check := validateExchange(rec, req, []byte(tc.body), tc.status, h, []byte(tc.resp))
			if got := len(rec.failed) == 0; got != tc.respOK {
				t.Errorf("response accepted = %v, want %v: %v", got, tc.respOK, rec.failed)
			}
			if got := check.RequestErr != nil; got != tc.requestErr {
				t.Errorf("request refused = %v, want %v: %v", got, tc.requestErr, check.RequestErr)
			}
		})
	}
}

func init() {
	// The admin page's documents are opaque text to the spec's validator.
	for _, ct := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}
