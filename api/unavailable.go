package api

import (
	"context"
	"errors"
	"net"
	"strings"
)

// isUnavailable reports whether err means Redis could not be reached, as
// opposed to a bug: such requests get 503 and may be retried.
func isUnavailable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "i/o timeout",
		"client is closed", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
