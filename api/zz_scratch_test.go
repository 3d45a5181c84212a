package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"
)

func TestZZScratch(t *testing.T) {
	s := &Server{cfg: Config{MaxPayload: 10}}
	chi.Walk(s.routes(), func(method, route string, h http.Handler, mw ...func(http.Handler) http.Handler) error {
		fmt.Println(method, route)
		return nil
	})
	for _, b := range []string{`{"backoff":{"bogus":1}}`, `{"max_attempts":1.5}`, `{"headers":{"a":1}}`, `{"run_at":5}`, `[]`, `{"backoff":{"initial":3}}`, `{"payload": 1`, `{"id":"x"} x`, `null`} {
		var jr jobRequest
		err := decodeBytes([]byte(b), &jr)
		fmt.Printf("%s => %v\n", b, err)
	}
	var br batchRequest
	fmt.Println(decodeBytes([]byte(`{"jobs":"x"}`), &br))
	_ = json.Valid
}
