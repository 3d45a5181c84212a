package callback

import (
	"context"
	"fmt"
	"time"

	"github.com/kairos-sh/kairos"
)

// The fake store has no subscriptions: its jobs are no deliveries
// (subscription_test.go tests deliveries against subsStore).
func (f *fakeStore) Subscription(_ context.Context, _, topic, name string) (kairos.Subscription, error) {
	return kairos.Subscription{}, fmt.Errorf("subscription %q of %q: %w", name, topic, kairos.ErrNotFound)
}

func (f *fakeStore) ParkDelivery(context.Context, string, string, string, string, time.Time) (bool, error) {
	return false, nil
}

func (f *fakeStore) RefileDelivery(context.Context, kairos.JobKey, time.Time) error { return nil }

func (f *fakeStore) DeliveryEnded(context.Context, kairos.Job, string, kairos.State) error {
	return nil
}
