package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// apiCall sends a request to a kairos process with a token of tenant acme
// and decodes its JSON answer into out; it returns the status.
func apiCall(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	tok, err := auth.New([]byte(secret), nil).Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, b)
		}
	}
	return res.StatusCode
}

type operationAnswer struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Matched int64  `json:"matched"`
	Done    int64  `json:"done"`
	Failed  int64  `json:"failed"`
}

// labelledJobs creates n jobs of acme/t labelled batch=<label>, due in an
// hour.
func labelledJobs(t *testing.T, store *rdb.Store, label string, n int) {
	t.Helper()
	at := store.Now().Add(time.Hour)
	for from := 0; from < n; from += 1000 {
		var jobs []kairos.Job
		for i := from; i < min(n, from+1000); i++ {
			jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: fmt.Sprintf("%s-%06d", label, i)},
				RunAt: at, Labels: map[string]string{"batch": label}})
		}
		for _, r := range store.EnqueueBatch(context.Background(), jobs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
}

// A bulk cancel whose process is killed with SIGKILL mid-way is taken
// over by another process, which finishes it: every job it selects is
// cancelled, and nothing else.
func TestBulkOperationResumedAfterSIGKILL(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	putTopic(t, store, "t", "http://127.0.0.1:1/", time.Second)
	const n = 30000
	labelledJobs(t, store, "doomed", n)
	labelledJobs(t, store, "kept", 500)

	a := startKairos(t, "A", prefix, "KAIROS_ROLES=api")
	var op operationAnswer
	if st := apiCall(t, "POST", a.URL(t)+"/v1/topics/t/jobs/bulk", map[string]any{"action": "cancel",
		"filter": map[string]any{"labels": map[string]string{"batch": "doomed"}}}, &op); st != http.StatusAccepted {
		t.Fatalf("bulk: %d", st)
	}
	// kill it mid-way: after some batches are recorded
	testwait.UntilNil(t, 20*time.Second, func() error {
		cur, err := store.GetOperation(context.Background(), op.ID)
		if err == nil && cur.Done == 0 {
			err = fmt.Errorf("%+v", cur)
		}
		return err
	}, "a batch of the operation recorded")
	a.Signal(syscall.SIGKILL)
	<-a.Done()
	at, err := store.GetOperation(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if at.State != rdb.OpRunning {
		t.Skipf("the operation finished before its process was killed (%+v): nothing to take over", at)
	}
	t.Logf("killed with %d of %d done", at.Done, n)

	b := startKairos(t, "B", prefix, "KAIROS_ROLES=api")
	url := b.URL(t) + "/v1/operations/" + op.ID
	var got operationAnswer
	testwait.UntilNil(t, 60*time.Second, func() error {
		if st := apiCall(t, "GET", url, nil, &got); st != http.StatusOK {
			t.Fatalf("get operation: %d", st)
		}
		if got.State != rdb.OpDone {
			return fmt.Errorf("%+v", got)
		}
		return nil
	}, "the operation done by B")
	t.Logf("done: %+v", got)
	if got.Failed != 0 || got.Done > n || got.Done < n-1000 {
		t.Errorf("operation %+v: want about %d done (the batch in flight at the kill may go uncounted), none failed", got, n)
	}
	after, err := store.GetOperation(context.Background(), op.ID)
	if err != nil || after.Owner == at.Owner {
		t.Errorf("finished by owner %s, the killed process was %s (%v)", after.Owner, at.Owner, err)
	}
	counts, err := store.Counts(context.Background(), "acme", "t")
	if err != nil {
		t.Fatal(err)
	}
	if counts[kairos.StateScheduled] != 500 {
		t.Errorf("%d jobs scheduled after the cancel, want the 500 kept", counts[kairos.StateScheduled])
	}
	page, err := store.ListJobs(context.Background(), rdb.ListQuery{Tenant: "acme", Topic: "t", State: kairos.StateScheduled,
		Labels: map[string]string{"batch": "doomed"}, Limit: 10})
	if err != nil || len(page.Jobs) != 0 {
		t.Errorf("doomed jobs left scheduled: %d %v", len(page.Jobs), err)
	}
}

// Jobs falling due while a bulk cancel of them runs are each either
// delivered or cancelled, never both: a job cancelled is never received,
// and a job received is delivered, not cancelled.
func TestBulkCancelRacingDeliveries(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, func(int, hit) int { time.Sleep(20 * time.Millisecond); return http.StatusOK }) // the point: deliveries take a while, racing the cancel
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	p := startKairos(t, "A", prefix, "KAIROS_ROLES=api,scanner,worker")
	url := p.URL(t)
	p.WaitLog(t, "consuming topic", 15*time.Second)

	const n = 4000
	start := store.Now().Add(time.Second)
	var jobs []kairos.Job
	for i := range n {
		jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: fmt.Sprintf("r-%05d", i)},
			RunAt: start.Add(time.Duration(i) * 2 * time.Second / n), Labels: map[string]string{"race": "1"}})
	}
	for from := 0; from < n; from += 1000 {
		for _, r := range store.EnqueueBatch(context.Background(), jobs[from:from+1000]) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	time.Sleep(time.Until(start.Add(300 * time.Millisecond))) // the point: some fired, most due during the operation
	var op operationAnswer
	if st := apiCall(t, "POST", url+"/v1/topics/t/jobs/bulk", map[string]any{"action": "cancel",
		"filter": map[string]any{"labels": map[string]string{"race": "1"}}}, &op); st != http.StatusAccepted {
		t.Fatalf("bulk: %d", st)
	}
	testwait.UntilNil(t, 60*time.Second, func() error {
		if op.State != rdb.OpDone {
			apiCall(t, "GET", url+"/v1/operations/"+op.ID, nil, &op)
			return fmt.Errorf("%+v", op)
		}
		return nil
	}, "the operation done")
	// let what was in flight finish
	testwait.UntilNil(t, 60*time.Second, func() error {
		c, err := store.Counts(context.Background(), "acme", "t")
		if err == nil && c[kairos.StateScheduled]+c[kairos.StateReady]+c[kairos.StateActive]+c[kairos.StateRetrying] > 0 {
			err = fmt.Errorf("counts %v", c)
		}
		return err
	}, "no job pending")
	waitSettled(t, store) // any duplicate has come
	got := rcv.byJob()
	var delivered, cancelled int
	for _, j := range jobs {
		stored, err := store.GetJob(context.Background(), j.JobKey)
		if err != nil {
			t.Fatalf("%s: %v", j.ID, err)
		}
		hits := len(got[j.ID])
		switch {
		case hits > 1:
			t.Errorf("%s received %d times", j.ID, hits)
		case hits == 1 && stored.State != kairos.StateDelivered:
			t.Errorf("%s was received and is %s: delivered and cancelled", j.ID, stored.State)
		case hits == 0 && stored.State != kairos.StateCancelled:
			t.Errorf("%s was neither received nor cancelled: %s", j.ID, stored.State)
		case hits == 1:
			delivered++
		default:
			cancelled++
		}
	}
	t.Logf("operation %+v; %d delivered, %d cancelled", op, delivered, cancelled)
	if int64(cancelled) != op.Done || delivered+cancelled != n {
		t.Errorf("operation cancelled %d; %d jobs are cancelled, %d delivered, of %d", op.Done, cancelled, delivered, n)
	}
	if delivered == 0 || cancelled == 0 {
		t.Logf("no race happened this time: %d delivered, %d cancelled", delivered, cancelled)
	}
}
