package callback

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFireReadsAsMuchOfTheBodyAsAsked(t *testing.T) {
	body := bytes.Repeat([]byte("abcdefgh"), 10_000) // 80,000 bytes: more than a notice carries
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Location", "/next/1")
		w.Header().Set("X-Other", "not kept")
		w.Write(body)
	})
	for _, tc := range []struct {
		read, want int
	}{
		{0, defaultRead},
		{NoBody, 0},
		{1, 1},
		{256, 256},
		{16384, 16384},
		{64 << 10, 64 << 10},
	} {
		t.Run(strconv.Itoa(tc.read), func(t *testing.T) {
			res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL, Read: tc.read})
			if res.Err != nil || res.Status != 200 {
				t.Fatalf("Fire = %d, %v", res.Status, res.Err)
			}
			if !bytes.Equal(res.Body, body[:tc.want]) {
				t.Errorf("Body is %d bytes; want the first %d", len(res.Body), tc.want)
			}
			want := map[string]string{"Content-Type": "application/octet-stream", "Location": "/next/1"}
			if diff := cmp.Diff(want, res.Header); diff != "" {
				t.Errorf("Header (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFireLeavesOutTheContentTypeOfAnEmptyAnswer(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8") // Flask's for return '', 204
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
	res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL})
	if res.Err != nil || res.Status != 200 || res.Body != nil || res.Header != nil {
		t.Fatalf("Fire = %d, body %q, header %v, %v; want 200 with no body and no header", res.Status, res.Body, res.Header, res.Err)
	}
}

func TestSnippetIsValidUTF8(t *testing.T) {
	res := Result{Body: []byte("bad \xff\xfe input é")}
	for n, want := range map[int]string{0: "", 4: "bad ", 100: "bad ? input é", 14: "bad ? input ", 15: "bad ? input é"} {
		if got := res.Snippet(n); got != want {
			t.Errorf("Snippet(%d) = %q; want %q", n, got, want)
		}
	}
}

// hugeHeaders answers 200 with one header of n bytes.
func hugeHeaders(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("h", n))
		w.Write([]byte("ok"))
	}
}

// TestFireRefusesAnAnswerWithHugeHeaders: an answer whose headers pass
// MaxResponseHeaderBytes is not read; its attempt is an error (not
// delivered), whatever its status. Headers under the cap are read.
func TestFireRefusesAnAnswerWithHugeHeaders(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{32 << 10, true}, {MaxResponseHeaderBytes + 1, false}, {10 << 20, false}} {
		t.Run(strconv.Itoa(tc.size), func(t *testing.T) {
			srv := serve(t, hugeHeaders(tc.size))
			res := NewClient(true, nil).Fire(t.Context(), Request{URL: srv.URL})
			if res.OK() != tc.ok {
				t.Fatalf("an answer with a %d-byte header: OK() = %t (status %d, err %v), want %t", tc.size, res.OK(), res.Status, res.Err, tc.ok)
			}
			if !tc.ok && (res.Status != 0 || res.Err == nil || !strings.Contains(res.Err.Error(), "headers exceed 64 KiB")) {
				t.Errorf("Result = %d, %v; want no status and an error naming the 64 KiB cap", res.Status, res.Err)
			}
		})
	}
}
