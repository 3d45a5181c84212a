package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/kairos-sh/kairos"
)

// fire makes one attempt at a started job and records its outcome.
//
// called runs once the callback's HTTP exchange is over, before the outcome
// is recorded: the topic's slot is free again for its next callback. A
// topic with a circuit breaker frees it after the outcome is recorded
// (record tells the breaker): a failure the breaker has not heard of yet
// would let the next job start against a receiver the breaker is about to
// shut off.
func (w *Worker) fire(ctx context.Context, job kairos.Job, t kairos.Topic, called func()) {
	t, sub, subErr := deliveryTopic(ctx, w.st, job, t) // a delivery fires as its subscription is now
	j := job.Resolve(t)
	start := w.st.Now()
	if j.Expired(start) {
		w.expire(ctx, j, t, start, called)
		return
	}
	a := kairos.Attempt{N: j.Attempts, At: start}
	tctx, span := w.startAttempt(ctx, j, time.Now())
	var res Result
	if subErr != nil {
		res = Result{Permanent: errors.Is(subErr, errSubscriptionGone), Err: subErr}
	} else if j.CallbackURL == "" {
		res = Result{Permanent: true, Err: errors.New("no callback URL: the job names none and its topic has none; register one with PUT /v1/topics/" + j.Topic)}
	} else if secret, err := w.secret(ctx, j.Tenant, t.OwnSecret()); err != nil {
		res = Result{Err: err}
	} else if req, err := w.request(tctx, j, secret, start); err != nil {
		res = Result{Err: err}
	} else {
		req.Read = bodyToRead(j, t)
		res = w.client.Fire(ctx, req)
	}
	// A topic with a circuit breaker keeps its slot until the outcome is
	// recorded (see above): that outcome then shares no round trip.
	slotWaits := t.HasBreaker()
	if !slotWaits {
		called()
	}
	a.Duration, a.Status, a.Response = res.Duration, res.Status, res.Snippet(t.KeptResponse())
	a.ResponseHeaders = res.Header
	o := outcomeOf(res, j)
	if o != kairos.OutcomeDelivered {
		a.Error = failure(res)
	}
	var retryAt time.Time
	if o == kairos.OutcomeRetrying {
		wait := Backoff(j.Attempts-j.ReplayedAfter, j.BackoffInitial, j.BackoffMax, nil)
		if res.HasRetryAfter {
			wait = res.RetryAfter
		}
		retryAt = w.st.Now().Add(wait)
		if j.Expired(retryAt) { // its next attempt could not start: it ends now
			o = kairos.OutcomeExpired
		}
	}
	endAttempt(span, res, o)
	var notices []kairos.Notice
	if n, ok := noticeOf(j, t, a, o, res.Body, w.st.Now()); ok {
		notices = append(notices, n)
	}
	state, err := w.record(ctx, j, a, o, retryAt, notices...)
	w.countEnded(ctx, j, sub, state)
	if slotWaits {
		called()
	}
	// the job's logger is made only for a line that is written: a
	// delivery's debug line mostly is not, and With costs an allocation
	// or more an attribute
	log := func() *slog.Logger {
		return w.log.With("tenant", j.Tenant, "topic", j.Topic, "job_id", j.ID, "attempt", j.Attempts)
	}
	switch {
	case err != nil:
		log().Error("record attempt; the job is retried when its lease lapses", "err", err)
	case state == "":
		log().Warn("attempt finished after its lease lapsed; another worker has the job")
	case state == kairos.StateDead:
		log().Warn("job dead", "status", a.Status, "error", a.Error)
	case state == kairos.StateRetrying:
		log().Info("attempt failed; retrying", "status", a.Status, "error", a.Error, "retry_at", retryAt)
	case state == kairos.StateExpired:
		log().Warn("attempt failed; its retry would start after the job's expiry: expired", "status", a.Status, "error", a.Error, "expires_at", j.ExpiresAt)
	case w.log.Enabled(ctx, slog.LevelDebug):
		log().Debug("delivered", "status", a.Status, "duration", a.Duration)
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(Event{Job: j, Attempt: a, State: state, Lateness: start.Sub(DueAt(j))})
	}
}

// bodyToRead is how much of the answer to attempt j.Attempts the worker
// reads (Request.Read): its topic's response_bytes for the log, or the
// most a notification carries when the answer may be one's: any answer
// with a success URL, the last attempt's with a failure URL.
func bodyToRead(j kairos.Job, t kairos.Topic) int {
	success, failure := noticeURLs(j, t)
	if success != "" || (failure != "" && j.AttemptsLeft() <= 0) {
		return kairos.MaxNoticeResponse
	}
	if n := t.KeptResponse(); n > 0 {
		return n
	}
	return NoBody
}

// request builds the signed callback request of attempt j.Attempts.
func (w *Worker) request(ctx context.Context, j kairos.Job, secret string, now time.Time) (Request, error) {
	h := make(http.Header, len(j.Headers)+10)
	for k, v := range j.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", j.ContentType)
	h.Set("User-Agent", "kairos")
	h.Set("Kairos-Job-Id", j.ID)
	h.Set("Kairos-Topic", j.Topic)
	h.Set("Kairos-Attempt", strconv.Itoa(j.Attempts))
	h.Set("Kairos-Scheduled-At", j.RunAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	if sid, ok := kairos.ScheduleOf(j.ID); ok {
		h.Set("Kairos-Schedule-Id", sid) // an occurrence of a recurring schedule
	}
	deliveryHeaders(h, j)
	injectTrace(ctx, h)
	sig := Signature{MsgID: j.UID, DeliveryID: j.UID + "." + strconv.Itoa(j.Attempts), URL: j.CallbackURL, Timestamp: now}
	if err := Sign(h, secret, sig, j.Payload); err != nil {
		return Request{}, fmt.Errorf("sign callback: %w", err)
	}
	return Request{Method: j.Method, URL: j.CallbackURL, Header: h, Body: j.Payload, Timeout: j.Timeout}, nil
}

// secret returns the signing secret of tenant, or of its topic when topic
// is not "" (Store.SigningSecret), cached for two seconds.
func (w *Worker) secret(ctx context.Context, tenant, topic string) (string, error) {
	key := tenant // a tenant name has no "/"
	if topic != "" {
		key = tenant + "/" + topic
	}
	if v, ok := w.secrets.Load(key); ok {
		c := v.(cachedSecret)
		if time.Since(c.at) < 2*time.Second {
			return c.secret, nil
		}
	}
	s, err := w.st.SigningSecret(ctx, tenant, topic)
	if err != nil {
		return "", err
	}
	w.secrets.Store(key, cachedSecret{secret: s, at: time.Now()})
	return s, nil
}

// cachedSecret is a signing secret as the store gave it at at.
type cachedSecret struct {
	secret string
	at     time.Time
}
