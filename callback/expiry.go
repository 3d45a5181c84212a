package callback

import (
	"cmp"
	"context"
	"encoding/json"
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
	state, err := w.finish(ctx, j, a, kairos.OutcomeExpired, time.Time{}, w.expiredNotice(j, t, a)...)
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

// expiredNotice is the failure notification of job j (of topic t), expired
// after attempt a (or before it, when a.Event says so): the dead job's
// notice (noticeBody) with "state": "expired"; none when no failure URL is
// set or j is itself a notification.
func (w *Worker) expiredNotice(j kairos.Job, t kairos.Topic, a kairos.Attempt) []kairos.Notice {
	url := cmp.Or(j.FailureURL, t.FailureURL)
	if _, isNotice := kairos.NoticeOf(j.ID); url == "" || isNotice {
		return nil
	}
	var body map[string]any
	if err := json.Unmarshal(noticeBody(j, a, w.st.Now()), &body); err != nil {
		return nil // noticeBody writes an object
	}
	body["state"] = string(kairos.StateExpired)
	if _, ok := body["type"]; ok {
		body["type"] = "job.expired"
	}
	body["expires_at"] = rfc3339ms(j.ExpiresAt)
	if a.Event == kairos.AttemptExpired { // no attempt was made at this one
		body["attempts"] = a.N - 1
		delete(body, "last_attempt")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil
	}
	return []kairos.Notice{{URL: url, Body: b}}
}
