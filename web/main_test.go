package web

import (
	"os"
	"testing"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestMain starts the redis-server that the browser test's kairos uses.
func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }
