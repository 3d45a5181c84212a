package callback

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos"
)

// record records attempt a's outcome o: it ends the attempt in flow
// control (flowClient.end: its permit back, its answer to the circuit
// breaker), which may change the outcome of a breaker's probe, then
// records the outcome in the store (Store.Finish), trying again while
// Redis does not answer (a partition, a frozen Redis), for up to
// recordPatience or until ctx ends: an outcome not recorded leaves the job
// to its lease, and a second delivery. Recording an outcome twice is
// harmless: the store applies an attempt's outcome once.
func (w *Worker) record(ctx context.Context, j kairos.Job, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error) {
	give := time.Now().Add(recordPatience)
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if try == 0 { // once: its permit is given back, the breaker told
			o, retryAt = w.flow.end(fctx, j.JobKey, a, o, retryAt)
		}
		state, err := w.st.Finish(fctx, j.JobKey, a, o, retryAt, notice...)
		cancel()
		if err == nil || time.Now().Add(wait).After(give) {
			return state, err
		}
		w.log.Debug("record attempt; trying again", "job_id", j.ID, "attempt", j.Attempts, "err", err)
		select {
		case <-ctx.Done():
			return state, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// recordPatience is how long a worker tries to record an outcome: about a
// default lease past the callback (KAIROS_READY_LEASE plus
// KAIROS_LEASE_GRACE); an outcome recorded after its job's lease lapsed is
// stale and changes nothing.
const recordPatience = 20 * time.Second

// noticeURLs are where job j of topic t tells of its delivery and of its
// death: its own URLs, else its topic's. A notification tells no one of
// its own.
func noticeURLs(j kairos.Job, t kairos.Topic) (success, failure string) {
	if _, isNotice := kairos.NoticeOf(j.ID); isNotice {
		return "", ""
	}
	return cmp.Or(j.SuccessURL, t.SuccessURL), cmp.Or(j.FailureURL, t.FailureURL)
}

// noticeOf is the notification that outcome o of attempt a at job j of
// topic t files with it, if any: a success notification for a delivery, a
// failure notification for a death or an expiry. body is the answer's
// (Result.Body).
func noticeOf(j kairos.Job, t kairos.Topic, a kairos.Attempt, o kairos.Outcome, body []byte, now time.Time) (kairos.Notice, bool) {
	success, failure := noticeURLs(j, t)
	switch {
	case o == kairos.OutcomeDelivered && success != "":
		return kairos.SuccessNotice(success, j, a, body), true
	case o == kairos.OutcomeDead && failure != "":
		return kairos.FailureNotice(failure, j, a, body, kairos.StateDead, now), true
	case o == kairos.OutcomeExpired && failure != "":
		return kairos.FailureNotice(failure, j, a, body, kairos.StateExpired, now), true
	}
	return kairos.Notice{}, false
}

// outcomeOf is what attempt res at job j came to: delivered on a 2xx;
// dead on a permanent failure or when j has no attempt left; else retried.
func outcomeOf(res Result, j kairos.Job) kairos.Outcome {
	switch {
	case res.OK():
		return kairos.OutcomeDelivered
	case res.Permanent || j.AttemptsLeft() <= 0:
		return kairos.OutcomeDead
	}
	return kairos.OutcomeRetrying
}

// failure says why an attempt that did not deliver failed, for its attempt log.
func failure(res Result) string {
	switch {
	case res.Err != nil:
		return res.Err.Error()
	case res.Status == http.StatusGone:
		return "callback answered 410 Gone: the receiver asked not to be called again, so the job is dead without further attempts"
	}
	return "callback answered " + strconv.Itoa(res.Status) + " " + http.StatusText(res.Status)
}
