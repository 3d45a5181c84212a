package api

import (
	"context"
	"errors"
	"net"
	"strings"
)

// isNotPrimary reports whether err is a write Redis refused because the
// node is a replica (READONLY: a failover demoted it, or kairos points at
// a replica) or has fewer replicas than min-replicas-to-write asks
// (NOREPLICAS). Nothing was written; the request may be retried.
func isNotPrimary(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "READONLY") || strings.Contains(msg, "NOREPLICAS")
}

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
