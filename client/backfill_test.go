package client_test

// The body and answer BackfillSchedule builds and takes apart.
type (
	backfillRequest struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	backfillResult struct {
		Instants int `json:"instants"`
	}
)
