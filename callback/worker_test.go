package callback

import (
	"context"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// finishQueue is a Queue that records, for each Finish, whether its context
// asked for a prompt outcome, and whether the topic's slot was still taken.
type finishQueue struct {
	prompt []bool
	freed  *bool
	freedT []bool
}

func (q *finishQueue) Now() time.Time                                                { return time.Now() }
func (q *finishQueue) Topics(context.Context) ([]kairos.Topic, error)                { return nil, nil }
func (q *finishQueue) SigningSecret(context.Context, string, string) (string, error) { return "", nil }
func (q *finishQueue) Next(context.Context, string, string, int, time.Duration, time.Duration) ([]kairos.Job, error) {
	return nil, nil
}

func (q *finishQueue) Finish(ctx context.Context, _ kairos.JobKey, _ kairos.Attempt, _, _ bool, _ time.Time, _ ...kairos.Notice) (kairos.State, error) {
	q.prompt = append(q.prompt, kairos.PromptOutcome(ctx))
	q.freedT = append(q.freedT, *q.freed)
	return kairos.StateDead, nil
}

// TestBreakerTopicOutcomeIsPrompt: a topic with a circuit breaker keeps its
// callback slot until the outcome is recorded, so its outcome asks the
// store not to wait for company; any other topic frees the slot first and
// lets its outcome share a round trip.
func TestBreakerTopicOutcomeIsPrompt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		breaker    int
		wantPrompt bool
	}{{"no breaker", 0, false}, {"breaker", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			freed := false
			q := &finishQueue{freed: &freed}
			w := NewWorker(q, WorkerConfig{})
			job := kairos.Job{JobKey: kairos.JobKey{Tenant: "t", Topic: "orders", ID: "j1"}, Attempts: 1, MaxAttempts: 1}
			// no callback URL: the attempt fails at once, without a request
			w.fire(context.Background(), job, kairos.Topic{Name: "orders", BreakerFailures: tc.breaker}, func() { freed = true })
			if len(q.prompt) != 1 {
				t.Fatalf("%d outcomes recorded, want 1", len(q.prompt))
			}
			if q.prompt[0] != tc.wantPrompt {
				t.Errorf("outcome marked prompt: %v, want %v", q.prompt[0], tc.wantPrompt)
			}
			if q.freedT[0] == tc.wantPrompt {
				t.Errorf("slot freed before the outcome was recorded: %v, want %v", q.freedT[0], !tc.wantPrompt)
			}
			if !freed {
				t.Error("slot never freed")
			}
		})
	}
}
