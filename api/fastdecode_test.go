package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fastBodies are bodies of the common form, which the fast decoders take.
var fastBodies = []string{
	`{"id":"order-1234","run_at":"2026-11-21T10:30:00.250Z","payload":{"order":1234,"state":"unpaid"},` +
		`"headers":{"X-Order-Ref":"1234"},"max_attempts":5,"timeout":"10s"}`,
	" \r\n\t{ \"delay\" : \"90s\" , \"payload\" : [1, \"]}\\\"\", {\"a\": null}] }\n",
	`{"delay":"1m","payload":"tschüß","callback_url":"https://example.com/h?a=1","method":"put"}`,
	`{"delay":"1s","flow_key":"partner-acme:eu","failure_url":"https://example.com/failed","payload":null}`,
	`{"id":null,"run_at":null,"delay":"1m","payload":null,"headers":null,"max_attempts":null,"backoff":null}`,
	`{"delay":"1m","headers":{},"backoff":{},"max_attempts":-0}`,
	`{"delay":"1m","headers":{"a":"1","A":"2"},"backoff":{"initial":"1s","max":null}}`,
	`{"delay":"1m","payload":-1.5e3,"max_attempts":123456789012345678}`,
	`{}`,
	`{"dedup_key":"order-1234/charge","dedup_window":"1d","delay":"1m"}`,
	`{"id":"debounce-me","on_conflict":"debounce","max_delay":"30s","payload":{"n":1}}`,
	`{"on_conflict":null,"max_delay":null,"dedup_key":null,"dedup_window":null}`,
	`{"ttl":"15m","priority":9,"delay":"1m"}`, `{"expires_at":"2026-11-21T10:30:00.250Z","priority":0}`,
	`{"expires_at":null,"ttl":null,"priority":null}`,
	`{"jobs":[{"delay":"1m"}, {"delay":"2m","payload":{"jobs":[]}} ,3]}`,
	`{"jobs":[]}`, `{"jobs":null}`,
	`{"delay":"1m","labels":{"env":"prod","customer":"c-1"}}`, `{"labels":null}`,
}

// slowBodies are left to the strict decoder, which names what is wrong or
// reads what is unusual.
var slowBodies = []string{
	`{"DELAY":"1m"}`, `{"delay":"1m","delay":"2m"}`, `{"delay":"1m","headers":{"a":"1","a":"2"}}`, `{"delay":"1m","backoff":{"max":"1s","max":"2s"}}`,
	`{"delay":"1\u006d"}`, `{"del\u0061y":"1m"}`, "{\"delay\":\"1m\",\"id\":\"\xff\"}", `{"delay":"1m"} x`,
	`{"delay":"1m","max_attempts":1.0}`, `{"delay":"1m","max_attempts":1e2}`, `{"delay":"1m","max_attempts":01}`,
	`{"delay":"1m","max_attempts":1234567890123456789}`, `{"delay":"1m","max_attempts":"5"}`,
	`{"delay":"1m","headers":{"a":null}}`, `{"delay":"1m","payload":[1,}`, `{"delay":"1m","payload":}`,
	`{"delay":"1m",}`, `{"delay":"1m"`, `{"":""}`, `[]`, `null`, ``, "\ufeff{}",
	`{"dedup_key":"a\u0000b"}`, `{"on_conflict":"keep","on_conflict":"replace"}`,
	`{"priority":1.0}`, `{"priority":"5"}`, `{"priority":5,"priority":6}`,
	`{"jobs":[{"delay":"1m"},]}`, `{"jobs":[1 2]}`, `{"jobs":[],"jobs":[]}`,
	`{"delay":"1m","labels":{"env":"a","env":"b"}}`, `{"delay":"1m","labels":{"env":1}}`,
}

// TestDecodeFastTakes checks which bodies take the fast way, so that
// FuzzDecodeFast compares the two ways on the bodies that matter.
func TestDecodeFastTakes(t *testing.T) {
	for _, tt := range []struct {
		bodies []string
		want   bool
	}{{fastBodies, true}, {slowBodies, false}} {
		for _, b := range tt.bodies {
			var jr jobRequest
			var br batchRequest
			if got := jr.decodeFast([]byte(b)) || br.decodeFast([]byte(b)); got != tt.want {
				t.Errorf("decodeFast(%s) = %t, want %t", b, got, tt.want)
			}
		}
	}
}

// FuzzDecodeFast checks that a body the fast decoders take reads the same
// as the strict decoder reads it.
func FuzzDecodeFast(f *testing.F) {
	for _, b := range append(fastBodies, slowBodies...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, d := range []struct {
			fast   fastDecoder
			strict any
		}{{new(jobRequest), new(jobRequest)}, {new(batchRequest), new(batchRequest)}} {
			if !d.fast.decodeFast(body) {
				continue
			}
			if err := decodeStrict(body, d.strict); err != nil {
				t.Fatalf("the fast decoder takes a %T the strict one refuses: %v", d.fast, err)
			}
			if diff := cmp.Diff(d.strict, d.fast); diff != "" {
				t.Errorf("%T (-strict +fast):\n%s", d.fast, diff)
			}
		}
	})
}
