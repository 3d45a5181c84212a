// Package spectest loads openapi.yaml, the contract of the HTTP API, for
// the tests that hold the server and the client to it.
package spectest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/kairos-sh/kairos"
)

// Spec is openapi.yaml, validated, with a router that finds the operation
// of a request.
type Spec struct {
	Doc    *openapi3.T
	Router routers.Router
}

// Load loads and validates openapi.yaml once per test binary.
var Load = sync.OnceValues(func() (*Spec, error) {
	doc, err := openapi3.NewLoader().LoadFromData(kairos.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate openapi.yaml: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route openapi.yaml: %w", err)
	}
	return &Spec{Doc: doc, Router: router}, nil
})

// Must returns the loaded spec or stops the test.
func Must(tb testing.TB) *Spec {
	tb.Helper()
	s, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
