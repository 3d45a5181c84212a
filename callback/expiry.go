package callback

import (
	"context"
	"time"

	"github.com/kairos-sh/kairos"
)

// expire ends job j, whose expiry passed before its attempt could start
// (now, on the store's clock): the attempt it was handed out for is taken
// back, no callback is made, and its failure URL is told. called frees
// its callback slot.
func (w *Worker) expire(ctx context.Context, j kairos.Job, t kairos.Topic, now time.Time, called func()) {
	called()
	a := kairos.Attempt{N: j.Attempts, At: now, Event: kairos.AttemptExpired}
	// the notification names the attempts made: not the one handed out
	made := j
	made.Attempts = a.N - 1
	var notices []kairos.Notice
	if n, ok := noticeOf(made, t, kairos.Attempt{}, kairos.OutcomeExpired, nil, now); ok {
		notices = append(notices, n)
	}
	state, err := w.record(ctx, j, a, kairos.OutcomeExpired, time.Time{}, notices...)
	if sub, ok := kairos.DeliveryOf(j); ok {
		w.countEnded(ctx, j, sub, state)
	}
	switch {
	case err != nil:
		w.log.Error("record an expiry; the job is handed out again when its lease lapses", "tenant", j.Tenant, "topic", j.Topic, "job_id", j.ID, "err", err)
	case state == kairos.StateExpired:
		w.log.Info("job expired before its attempt started", "tenant", j.Tenant, "topic", j.Topic, "job_id", j.ID, "expires_at", j.ExpiresAt)
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(Event{Job: j, Attempt: a, State: state})
	}
}
