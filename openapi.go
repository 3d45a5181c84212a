package kairos

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the REST API, openapi.yaml at the
// repository root. The API serves it at GET /openapi.yaml, and the api
// package's tests hold every route, example and response to it.
//
//go:embed openapi.yaml
var OpenAPI []byte
