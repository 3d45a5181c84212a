// Package callback is kairos's delivery stage: the worker that takes the
// jobs the scanners pushed onto their topics' ready lists and fires each,
// at its due time, as a signed HTTP callback. One job's path, in the
// order the files tell it:
//
//  1. Pop (pop.go). One pop loop a group of shards takes the jobs of
//     every topic known with one blocking pop (BLMPOP), as many as the
//     holder has room for. A topic whose due jobs already fill its
//     callback slots is left out until they are taken.
//  2. Start (pop.go). What a pop took is started in the store
//     (Store.Start): a job fires only once started, and once only.
//  3. Pace (pace.go). A topic with a rate limit alone gets each job's
//     time from its rate as it is popped: one call a flow for a pop.
//  4. Hold (hold.go, ready.go). The holder holds each job until the
//     Redis clock has surely reached its due time, whatever this
//     machine's clock says, and then in its topic's queue until the
//     topic's consumer takes it. A job it cannot hand out in time is
//     released: it goes back to Redis, keeping its place and attempts.
//  5. Flow gate (consume.go, gate.go, flow.go). Each topic's consumer
//     takes as many due jobs as it has free callback slots, and the
//     flow client asks flow control which may start now: a job given a
//     later time goes back to Redis until then; one whose flow's permits
//     are all taken waits in the holder until one is given back.
//  6. Fire (fire.go). One attempt: the request built and signed
//     (sign.go), sent by a client whose dialer refuses private and
//     metadata addresses (client.go, dial.go, target.go).
//  7. Outcome (outcome.go). The attempt ends in flow control (its permit
//     given back, its answer told to the circuit breaker), and its
//     outcome is recorded: delivered, retried after a backoff
//     (backoff.go), or dead, with the notification it files. A job whose
//     expiry passed before it fired ends without a callback (expiry.go).
//
// Worker (worker.go) composes these parts and runs them; trace.go traces
// pops and attempts. The worker reaches Redis only through Store, which
// the wiring fills with internal/rdb's; the words they share
// (kairos.Claimed, kairos.GateResult) are the root package's.
//
// Receivers do not import this package: they check a callback's
// signatures with package github.com/kairos-sh/kairos/verify, which
// imports only the standard library and golang-jwt (this package pulls in
// the server's dependencies).
package callback
