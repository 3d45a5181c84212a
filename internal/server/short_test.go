package server

import "testing"

// skipShort skips a test that waits long (faults, idle windows, load)
// under -short, the quick tier of make test-short; make test, which CI
// runs, passes no -short and runs it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long waits: not in the quick tier (-short); make test runs it")
	}
}
