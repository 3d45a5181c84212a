// Package server runs kairos in a process: it reads the configuration
// (flags over KAIROS_* variables over defaults), connects to Redis (or
// starts the embedded one) and wires the roles asked for, API, scanner and
// workers, to one store and one HTTP listener. `kairos serve` runs one.
package server
