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
	state, err := w.finish(ctx, j, a, kairos.OutcomeExpired, time.Time{}, w.expiredNotice(j, t, a, nil)...)
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

// expiredNotice is the failure notification of job j (of topic t),
// expired after attempt a, whose answer had body (or before it, when
// a.Event says so: no attempt was made at this one); none when no failure
// URL is set or j is itself a notification.
func (w *Worker) expiredNotice(j kairos.Job, t kairos.Topic, a kairos.Attempt, body []byte) []kairos.Notice {
	_, failure := noticeURLs(j, t)
	if failure == "" {
		return nil
	}
	if a.Event == kairos.AttemptExpired {
		j.Attempts, a = a.N-1, kairos.Attempt{}
	}
	n := kairos.FailureNotice(failure, j, a, body, kairos.StateExpired, w.st.Now())
	return []kairos.Notice{n}
}
