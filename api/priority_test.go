package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPriority(t *testing.T) {
	for _, tc := range []struct {
		name       string
		priority   *int
		want       int
		wantFields []string
	}{
		{name: "default", want: 0},
		{name: "highest", priority: new(9), want: 9},
		{name: "below range", priority: new(-1), wantFields: []string{"priority"}},
		{name: "above range", priority: new(10), wantFields: []string{"priority"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fe fieldErrors
			if got := (jobRequest{Priority: tc.priority}).priority(&fe); got != tc.want {
				t.Errorf("priority %d, want %d", got, tc.want)
			}
			if d := cmp.Diff(tc.wantFields, fieldNames(fe)); d != "" {
				t.Errorf("field errors (-want +got):\n%s", d)
			}
		})
	}
}
