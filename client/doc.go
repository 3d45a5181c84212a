// Package client is a Go client of the kairos HTTP API (v1): topics, jobs,
// batches, dead letters, signing keys and statistics, with typed requests
// and answers that mirror openapi.yaml field for field.
//
// The package needs nothing but the standard library: importing it pulls in
// neither Redis nor the server.
//
//	c, err := client.New("https://kairos.example.com", client.WithToken(os.Getenv("KAIROS_TOKEN")))
//	if err != nil {
//		return err
//	}
//	job, err := c.CreateJob(ctx, "orders", client.JobRequest{
//		ID:      "cancel-order-1042",
//		Delay:   client.Duration(30 * time.Minute),
//		Payload: json.RawMessage(`{"order": 1042}`),
//	})
//
// # Errors
//
// A call the server refuses returns an [*Error] holding the problem
// document (RFC 9457) it answered: status, type, title, detail and, for a
// validation problem, the broken fields. Match it with [errors.As], or with
// [IsNotFound], [IsConflict] and [StatusCode]. A call that never got an
// answer returns the transport's error (a [*url.Error] inside), and a
// cancelled or expired context returns the context's error.
//
// # Retries
//
// Only calls that can be repeated without a second effect are retried: GET,
// PUT and DELETE requests, and creates (single or batch) whose jobs all
// carry an id of the caller's choosing. Such a create is an upsert: sent
// again, it replaces the job it made, which has not fired yet, so the job
// is still delivered once (kairos itself asks clients to repeat a create
// with its id when Redis replicas did not confirm it in time). The one
// exception: a job due within the retry's wait may have fired before the
// repeat arrives, and is then scheduled again. Creates without an id,
// reschedules (PATCH), replays of dead jobs and key rotations are never
// retried.
//
// A retry follows a transport error (no answer at all) or a 429, 502, 503
// or 504 answer, at most [RetryPolicy.Attempts] attempts in all, waiting
// as the answer's Retry-After header says (seconds or an HTTP date) or, without
// one, a random time up to an exponentially growing bound (full jitter). A
// Retry-After longer than [RetryPolicy.MaxRetryAfter], or a wait that would
// outlast the context's deadline, ends the retries at once with the last
// error. A DELETE repeated after a lost answer may find its target already
// gone and return a not-found [*Error].
package client
