// Package e2e holds kairos's end-to-end tests: the engine in process and
// `kairos serve` as real child processes, against a real redis-server and
// loopback HTTP receivers.
package e2e
