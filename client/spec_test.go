package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/spectest"
)

// The tests in this file hold the client to openapi.yaml: every operation
// has a method that sends a request the spec accepts, every field of the
// client's types is a property of the schema it mirrors and the other way
// round, and every example in the spec survives a trip through them.

func mustSpec(tb testing.TB) *spectest.Spec { return spectest.Must(tb) }

// notAPICalls are the operations the client has no method for, and why.
var notAPICalls = map[string]string{
	"metrics":    "Prometheus text for a scraper",
	"adminPage":  "HTML for a browser",
	"adminAsset": "the admin page's files",
	"getOpenAPI": "this document",
}

// fullJob sets every field of a job request that can go with run_at.
var fullJob = client.JobRequest{
	ID: "order-8412", RunAt: time.Date(2026, 11, 21, 10, 30, 0, 250e6, time.UTC),
	Payload:     json.RawMessage(`{ "order_id": 8412 }`),
	CallbackURL: "https://api.example.net/reminders",
	CallbackSettings: client.CallbackSettings{
		Method: "PUT", Headers: map[string]string{"X-Campaign": "winter"},
		MaxAttempts: 3, Timeout: client.Duration(5 * time.Second),
		Backoff: &client.Backoff{Initial: client.Duration(10 * time.Second), Max: client.Duration(10 * time.Minute)},
	},
	Labels: map[string]string{"env": "prod"},
}

// calls makes, for each operation of the spec by operationId, the client
// calls that send it, with every field and query parameter set somewhere.
var calls = map[string]func(context.Context, *client.Client) error{
	"healthz": func(ctx context.Context, c *client.Client) error { return c.Health(ctx) },
	"readyz":  func(ctx context.Context, c *client.Client) error { return c.Ready(ctx) },
	"listTopics": func(ctx context.Context, c *client.Client) error {
		_, err := c.ListTopics(ctx)
		return err
	},
	"putTopic": func(ctx context.Context, c *client.Client) error {
		_, _, err := c.PutTopic(ctx, "orders", client.TopicRequest{
			CallbackURL: "https://hooks.example.com/orders",
			CallbackSettings: client.CallbackSettings{
				Method: "post", Headers: map[string]string{"X-Shop": "eu-1"}, Timeout: client.Duration(10 * time.Second), MaxAttempts: 5,
				Backoff: &client.Backoff{Initial: client.Duration(2 * time.Second), Max: client.Duration(30 * time.Minute)},
			},
			Concurrency: 20, Signing: client.SigningTopic,
		})
		return err
	},
	"getTopic": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetTopic(ctx, "orders")
		return err
	},
	"deleteTopic": func(ctx context.Context, c *client.Client) error { return c.DeleteTopic(ctx, "orders") },
	"pauseTopic": func(ctx context.Context, c *client.Client) error {
		_, err := c.PauseTopic(ctx, "orders")
		return err
	},
	"resumeTopic": func(ctx context.Context, c *client.Client) error {
		_, err := c.ResumeTopic(ctx, "orders")
		return err
	},
	"getQuota": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetQuota(ctx, "acme")
		return err
	},
	"putQuota": func(ctx context.Context, c *client.Client) error {
		pending, burst := int64(10000), 100
		_, err := c.PutQuota(ctx, "acme", client.QuotaRequest{MaxPending: &pending,
			Rate: &client.QuotaRate{Limit: 50, Period: client.Duration(time.Second)}, Burst: &burst})
		return err
	},
	"deleteQuota": func(ctx context.Context, c *client.Client) error { return c.DeleteQuota(ctx, "acme") },
	"revokeTokens": func(ctx context.Context, c *client.Client) error {
		if _, err := c.RevokeTokens(ctx, "acme", client.RevocationRequest{IssuedBefore: &client.Time{Time: time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)}}); err != nil {
			return err
		}
		_, err := c.RevokeTokens(ctx, "acme", client.RevocationRequest{JTI: "n3oZIMcafZyF8Segdv8SnQ"})
		return err
	},
	"mintToken": func(ctx context.Context, c *client.Client) error {
		_, err := c.MintToken(ctx, client.TokenRequest{Tenant: "acme", Admin: true, TTL: client.Duration(24 * time.Hour)})
		return err
	},
	"createJob": func(ctx context.Context, c *client.Client) error {
		if _, err := c.CreateJob(ctx, "orders", fullJob); err != nil {
			return err
		}
		if _, err := c.CreateJob(ctx, "orders", client.JobRequest{Delay: client.Duration(30 * time.Minute)}); err != nil {
			return err
		}
		if _, err := c.CreateJob(ctx, "orders", client.JobRequest{RunAt: time.Date(2026, 11, 21, 10, 0, 52, 522490000, time.UTC)}); err != nil {
			return err
		}
		_, err := c.CreateJob(ctx, "orders", client.JobRequest{}) // now
		return err
	},
	"createJobs": func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateJobs(ctx, "orders", []client.JobRequest{fullJob, {ID: "r2", Payload: json.RawMessage(`"text"`)}})
		return err
	},
	"listJobs": func(ctx context.Context, c *client.Client) error {
		_, err := c.ListJobs(ctx, "orders", client.ListOptions{State: client.StateRetrying, Kind: client.KindJob, Limit: 10, Cursor: "MTc5NTI1", Labels: map[string]string{"env": "prod", "team": "a"}})
		return err
	},
	"getJob": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetJob(ctx, "orders", "order-8412")
		return err
	},
	"rescheduleJob": func(ctx context.Context, c *client.Client) error {
		if _, err := c.RescheduleJob(ctx, "orders", "order-8412", client.RescheduleRequest{RunAt: time.Now()}); err != nil {
			return err
		}
		_, err := c.RescheduleJob(ctx, "orders", "order-8412", client.RescheduleRequest{Delay: client.Duration(time.Hour)})
		return err
	},
	"cancelJob": func(ctx context.Context, c *client.Client) error { return c.CancelJob(ctx, "orders", "order-8412") },
	"retryJob": func(ctx context.Context, c *client.Client) error {
		_, err := c.RetryJob(ctx, "orders", "order-8412")
		return err
	},
	"bulkJobs": func(ctx context.Context, c *client.Client) error {
		_, err := c.BulkJobs(ctx, "orders", client.BulkRequest{Action: client.BulkCancel, Filter: client.BulkFilter{
			State: client.StateScheduled, Labels: map[string]string{"customer": "acme"},
			RunAtFrom: client.Time{Time: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}, RunAtTo: client.Time{Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}}})
		return err
	},
	"getOperation": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetOperation(ctx, "op_k4zq2mxc7n3ra5b6tyhe")
		return err
	},
	"listDead": func(ctx context.Context, c *client.Client) error {
		_, err := c.ListDead(ctx, client.ListOptions{Limit: 500, Cursor: "MTc5NTI2", Kind: client.KindNotification})
		return err
	},
	"getSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetSigningKeys(ctx)
		return err
	},
	"rotateSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.RotateSigningKeys(ctx)
		return err
	},
	"putSubscription": func(ctx context.Context, c *client.Client) error {
		paused := false
		_, _, err := c.PutSubscription(ctx, "orders", "billing", client.SubscriptionRequest{
			URL: "https://billing.example.com/hooks", EventTypes: []string{"order.created"},
			Filter: json.RawMessage(`{"data.total": {"$gte": 100}}`),
			CallbackSettings: client.CallbackSettings{
				Headers: map[string]string{"X-Team": "billing"},
				Method:  "PUT", Timeout: client.Duration(5 * time.Second), MaxAttempts: 5,
				Backoff: &client.Backoff{Initial: client.Duration(time.Second), Max: client.Duration(time.Minute)},
			},
			Rate:        &client.Rate{Limit: 10, Period: client.Duration(time.Second)},
			Parallelism: 4, Breaker: &client.BreakerRequest{Failures: 5, Cooldown: client.Duration(30 * time.Second)},
			Paused: &paused, Description: "billing", Signing: client.SigningSubscription,
		})
		return err
	},
	"getSubscription": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetSubscription(ctx, "orders", "billing")
		return err
	},
	"listSubscriptions": func(ctx context.Context, c *client.Client) error {
		_, err := c.ListSubscriptions(ctx, "orders")
		return err
	},
	"deleteSubscription": func(ctx context.Context, c *client.Client) error {
		_, err := c.DeleteSubscription(ctx, "orders", "billing")
		return err
	},
	"pauseSubscription": func(ctx context.Context, c *client.Client) error {
		_, err := c.PauseSubscription(ctx, "orders", "billing")
		return err
	},
	"resumeSubscription": func(ctx context.Context, c *client.Client) error {
		_, err := c.ResumeSubscription(ctx, "orders", "billing")
		return err
	},
	"getSubscriptionSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetSubscriptionSigningKeys(ctx, "orders", "billing")
		return err
	},
	"rotateSubscriptionSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.RotateSubscriptionSigningKeys(ctx, "orders", "billing")
		return err
	},
	"publishMessage": func(ctx context.Context, c *client.Client) error {
		at := client.Time{Time: time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)}
		if _, err := c.Publish(ctx, "orders", client.MessageRequest{ID: "order-8412-created", EventType: "order.created",
			Payload: json.RawMessage(`{"data": {"total": 120}}`), RunAt: &at, Labels: map[string]string{"region": "eu"},
			DedupKey: "order-8412", DedupWindow: client.Duration(time.Hour), ExpiresAt: &at, Priority: 5}); err != nil {
			return err
		}
		_, err := c.Publish(ctx, "orders", client.MessageRequest{Delay: client.Duration(time.Minute), TTL: client.Duration(time.Hour)})
		return err
	},
	"getMessage": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetMessage(ctx, "orders", "order-8412-created")
		return err
	},
	"getTopicSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetTopicSigningKeys(ctx, "orders")
		return err
	},
	"rotateTopicSigningKeys": func(ctx context.Context, c *client.Client) error {
		_, err := c.RotateTopicSigningKeys(ctx, "orders")
		return err
	},
	"putSchedule": func(ctx context.Context, c *client.Client) error {
		if _, err := c.PutSchedule(ctx, "reports", "daily-report", client.ScheduleRequest{
			Cron: "0 9 * * MON-FRI", Timezone: "Europe/Paris", CatchUp: client.CatchUpAll, Paused: true,
			StartAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), EndAt: time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC),
			Payload: json.RawMessage(`{ "report": "daily" }`), CallbackURL: "https://api.example.net/reports",
			CallbackSettings: client.CallbackSettings{
				Method: "PUT", Headers: map[string]string{"X-Report": "daily"}, MaxAttempts: 3, Timeout: client.Duration(5 * time.Second),
				Backoff: &client.Backoff{Initial: client.Duration(10 * time.Second), Max: client.Duration(10 * time.Minute)},
			},
			Labels: map[string]string{"report": "daily"},
		}); err != nil {
			return err
		}
		_, err := c.PutSchedule(ctx, "reports", "heartbeat", client.ScheduleRequest{Every: client.Duration(90 * time.Second)})
		return err
	},
	"getSchedule": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetSchedule(ctx, "reports", "daily-report")
		return err
	},
	"listSchedules": func(ctx context.Context, c *client.Client) error {
		_, err := c.ListSchedules(ctx, "reports", client.ListOptions{Limit: 10, Cursor: "ZGFpbHk"})
		return err
	},
	"deleteSchedule": func(ctx context.Context, c *client.Client) error {
		return c.DeleteSchedule(ctx, "reports", "daily-report")
	},
	"pauseSchedule": func(ctx context.Context, c *client.Client) error {
		_, err := c.PauseSchedule(ctx, "reports", "daily-report")
		return err
	},
	"resumeSchedule": func(ctx context.Context, c *client.Client) error {
		_, err := c.ResumeSchedule(ctx, "reports", "daily-report")
		return err
	},
	"triggerSchedule": func(ctx context.Context, c *client.Client) error {
		_, err := c.TriggerSchedule(ctx, "reports", "daily-report")
		return err
	},
	"backfillSchedule": func(ctx context.Context, c *client.Client) error {
		_, err := c.BackfillSchedule(ctx, "reports", "daily-report", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC))
		return err
	},
	"getStats": func(ctx context.Context, c *client.Client) error {
		_, err := c.GetStats(ctx)
		return err
	},
	"tick": func(ctx context.Context, c *client.Client) error {
		_, err := c.Tick(ctx, 55*time.Second)
		return err
	},
}

// uncovered lists the spec's operations that neither have calls nor are
// notAPICalls, and the calls that name no operation of the spec.
func uncovered(doc *openapi3.T, calls map[string]func(context.Context, *client.Client) error) (missing, unknown []string) {
	ops := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[op.OperationID] = true
			if calls[op.OperationID] == nil && notAPICalls[op.OperationID] == "" {
				missing = append(missing, op.OperationID+" ("+method+" "+path+")")
			}
		}
	}
	for id := range calls {
		if !ops[id] {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	return missing, unknown
}

func TestEveryOperationHasAMethod(t *testing.T) {
	missing, unknown := uncovered(mustSpec(t).Doc, calls)
	if len(missing) > 0 {
		t.Errorf("operations of openapi.yaml without a client method (add one, and a call to this test's table): %v", missing)
	}
	if len(unknown) > 0 {
		t.Errorf("calls for operations openapi.yaml does not have: %v", unknown)
	}
	// The check itself: an operation left out is reported.
	some := maps.Clone(calls)
	delete(some, "retryJob")
	if missing, _ := uncovered(mustSpec(t).Doc, some); !slices.ContainsFunc(missing, func(s string) bool { return strings.HasPrefix(s, "retryJob ") }) {
		t.Errorf("uncovered did not report a missing retryJob: %v", missing)
	}
}

// TestMethodsSendWhatTheSpecSays runs each operation's calls against a
// server that holds every request to openapi.yaml (path, method, query
// parameters, body: an unknown or misspelled field fails it) and answers
// with the operation's own example, which the client must read.
func TestMethodsSendWhatTheSpecSays(t *testing.T) {
	s := mustSpec(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		route, params, err := s.Router.FindRoute(r)
		if err != nil {
			t.Errorf("%s %s: not an operation of openapi.yaml: %v", r.Method, r.URL, err)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		op := route.Operation
		mu.Lock()
		seen = append(seen, op.OperationID)
		mu.Unlock()
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: bearerPresent}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s: the client's request %s %s breaks openapi.yaml: %v\nbody: %s", op.OperationID, r.Method, r.URL, err, body)
		}
		status, example := successExample(t, op)
		if example == nil {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(example)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithToken("t0ken"), client.WithTenant("acme"), client.WithRevealedHeaders())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range slices.Sorted(maps.Keys(calls)) {
		mu.Lock()
		seen = nil
		mu.Unlock()
		if err := calls[id](context.Background(), c); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		mu.Lock()
		for _, got := range seen {
			if got != id {
				t.Errorf("the calls of %s sent %s", id, got)
			}
		}
		if len(seen) == 0 {
			t.Errorf("the calls of %s sent nothing", id)
		}
		mu.Unlock()
	}
}

func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

// successExample returns the lowest 2xx status of op and an example of its
// JSON body (nil for none).
func successExample(tb testing.TB, op *openapi3.Operation) (int, any) {
	for code := 200; code < 300; code++ {
		r := op.Responses.Value(strconv.Itoa(code))
		if r == nil {
			continue
		}
		mt := r.Value.Content.Get("application/json")
		if mt == nil {
			return code, nil
		}
		if mt.Example != nil {
			return code, mt.Example
		}
		for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
			return code, mt.Examples[name].Value.Value
		}
		tb.Fatalf("%s: %d response has no example", op.OperationID, code)
	}
	tb.Fatalf("%s: no 2xx response", op.OperationID)
	return 0, nil
}

// mirrors pairs each schema of openapi.yaml the client speaks with the
// client type that mirrors it; the fields of nested objects are held to
// their properties' schemas in turn.
// subscriptionList is ListSubscriptions' answer before it is unwrapped.
type subscriptionList struct {
	Subscriptions []client.Subscription `json:"subscriptions"`
}

var mirrors = map[string]any{
	"TopicRequest":      client.TopicRequest{},
	"Topic":             client.Topic{},
	"TopicList":         topicList{},
	"JobRequest":        client.JobRequest{},
	"RescheduleRequest": client.RescheduleRequest{},
	"BatchRequest":      batchRequest{},
	"Job":               client.Job{},
	"JobList":           client.JobList{},
	"BatchResult":       client.BatchResult{},
	"SigningKeys":       client.SigningKeys{},
	"TickRequest":       client.TickRequest{},
	"TickSummary":       client.TickSummary{},
	"Stats":             client.Stats{},
	"ScheduleRequest":   client.ScheduleRequest{},
	"Schedule":          client.Schedule{},
	"ScheduleList":      client.ScheduleList{},
	"Problem":           client.Error{},
	"Quota":             client.Quota{},
	"QuotaRequest":      client.QuotaRequest{},
	"Revocation":        client.Revocation{},
	"TokenRequest":      client.TokenRequest{},
	"Token":             client.Token{},
	"RevocationRequest": client.RevocationRequest{},
	"JobForgotten":      jobForgotten{},
	"Health":            status{},
	"Ready":             status{},
	"Notification":      client.Notification{},
	"BackfillRequest":   backfillRequest{},
	"BackfillResult":    backfillResult{},
	"BulkRequest":       client.BulkRequest{},
	"Operation":         client.Operation{},

	// fan-out
	"SubscriptionRequest": client.SubscriptionRequest{},
	"Subscription":        client.Subscription{},
	"SubscriptionList":    subscriptionList{},
	"SubscriptionDeleted": client.SubscriptionDeleted{},
	"MessageRequest":      client.MessageRequest{},
	"Published":           client.Published{},
	"Message":             client.Message{},
}

// The wrappers the client takes apart: ListTopics returns the list,
// CreateJobs takes the jobs, Health and Ready return only errors.
type (
	topicList struct {
		Topics []client.Topic `json:"topics"`
	}
	batchRequest struct {
		Jobs []client.JobRequest `json:"jobs"`
	}
	status struct {
		Status string `json:"status"`
	}
	// jobForgotten is what a client.Job holds of a duplicate create's
	// answer whose first job's record is gone.
	jobForgotten struct {
		ID     string `json:"id"`
		Topic  string `json:"topic"`
		Tenant string `json:"tenant"`
		Result string `json:"result"`
	}
)

func TestTypesMirrorSchemas(t *testing.T) {
	s := mustSpec(t)
	for name, v := range mirrors {
		ref := s.Doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("openapi.yaml has no schema %s", name)
			continue
		}
		for _, p := range compareFields(name, reflect.TypeOf(v), ref.Value) {
			t.Error(p)
		}
	}
	// Every object schema a request or a 2xx answer of an operation
	// uses has a mirror.
	for path, item := range s.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if notAPICalls[op.OperationID] != "" {
				continue
			}
			var refs []*openapi3.SchemaRef
			if op.RequestBody != nil {
				refs = append(refs, op.RequestBody.Value.Content.Get("application/json").Schema)
			}
			for code, r := range op.Responses.Map() {
				if mt := r.Value.Content.Get("application/json"); mt != nil && strings.HasPrefix(code, "2") {
					refs = append(refs, mt.Schema)
				}
			}
			for i := 0; i < len(refs); i++ { // refs grows by the members of a oneOf
				r := refs[i]
				if r.Ref == "" && r.Value != nil && len(r.Value.OneOf) > 0 {
					refs = append(refs, r.Value.OneOf...) // each answer it may be
					continue
				}
				if name := strings.TrimPrefix(r.Ref, "#/components/schemas/"); mirrors[name] == nil {
					t.Errorf("%s %s: schema %q has no client type in this test's mirrors", method, path, r.Ref)
				}
			}
		}
	}
	var states []client.State
	for _, v := range s.Doc.Components.Schemas["State"].Value.Enum {
		states = append(states, client.State(v.(string)))
	}
	if d := cmp.Diff(states, client.States); d != "" {
		t.Errorf("client.States differ from the State enum of openapi.yaml (-spec +client):\n%s", d)
	}
	results := s.Doc.Components.Schemas["Job"].Value.Properties["result"].Value.Enum
	if d := cmp.Diff([]any{client.ResultCreated, client.ResultReplaced, client.ResultKept, client.ResultDebounced, client.ResultDuplicate}, results); d != "" {
		t.Errorf("client.Result* differ from Job.result's enum (-client +spec):\n%s", d)
	}
}

// TestTypesMirrorSchemasCatchesMisspelling: the comparison finds a field
// the schema lacks, a property without a field, and a wrong type.
func TestTypesMirrorSchemasCatchesMisspelling(t *testing.T) {
	type keys struct {
		Current string `json:"curent"`
		Next    int    `json:"next"`
	}
	got := compareFields("SigningKeys", reflect.TypeOf(keys{}), mustSpec(t).Doc.Components.Schemas["SigningKeys"].Value)
	want := []string{
		`SigningKeys: field Current (json "curent") is not a property of the schema`,
		`SigningKeys: property "current" has no field`,
		`SigningKeys.next: schema type string, Go type int`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("compareFields (-want +got):\n%s", d)
	}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// compareFields lists where the JSON fields of typ and the properties of
// schema s disagree, at path, recursing into nested objects and arrays.
func compareFields(path string, typ reflect.Type, s *openapi3.Schema) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	s = resolve(s)
	var out []string
	if typ == rawType || s.Type == nil {
		return nil // any JSON value
	}
	switch {
	case s.Type.Is("object") && typ.Kind() == reflect.Map:
		return nil // headers: names of the caller's choosing
	case s.Type.Is("array") && typ.Kind() == reflect.Slice:
		return compareFields(path+"[]", typ.Elem(), s.Items.Value)
	case s.Type.Is("object") && typ.Kind() == reflect.Struct && typ != timeType:
	default:
		if !scalarFits(s, typ) {
			out = append(out, fmt.Sprintf("%s: schema type %s, Go type %s", path, s.Type.Slice()[0], typ))
		}
		return out
	}
	fields := map[string]reflect.StructField{}
	for _, f := range jsonFields(typ) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		fields[name] = f
		if s.Properties[name] == nil {
			out = append(out, fmt.Sprintf("%s: field %s (json %q) is not a property of the schema", path, f.Name, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		f, ok := fields[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: property %q has no field", path, name))
			continue
		}
		out = append(out, compareFields(path+"."+name, f.Type, s.Properties[name].Value)...)
	}
	return out
}

// jsonFields lists the fields of struct type typ that encoding/json
// writes, those of an embedded struct without a JSON name of its own
// (CallbackSettings) as typ's own.
func jsonFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		default:
			out = append(out, f)
		}
	}
	return out
}

// resolve returns the schema an allOf of one schema stands for.
func resolve(s *openapi3.Schema) *openapi3.Schema {
	for s.Type == nil && len(s.AllOf) == 1 && len(s.Properties) == 0 {
		s = s.AllOf[0].Value
	}
	return s
}

// scalarFits reports whether Go type typ carries a value of scalar schema s.
func scalarFits(s *openapi3.Schema, typ reflect.Type) bool {
	switch k := typ.Kind(); {
	case s.Type.Is("string"):
		return k == reflect.String || typ == timeType || typ.Implements(marshalerType)
	case s.Type.Is("integer"):
		return k >= reflect.Int && k <= reflect.Uint64
	case s.Type.Is("number"):
		return k == reflect.Float64 || k == reflect.Float32
	case s.Type.Is("boolean"):
		return k == reflect.Bool
	}
	return false
}

// TestExamplesRoundTrip decodes every request and 2xx or problem example
// of openapi.yaml into the client type of its schema and encodes it again:
// nothing may be lost or changed but the spelling of times and durations.
func TestExamplesRoundTrip(t *testing.T) {
	s := mustSpec(t)
	n := 0
	check := func(where string, ref *openapi3.SchemaRef, example any) {
		t.Helper()
		name := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		mirror, ok := mirrors[name]
		if !ok {
			return
		}
		n++
		raw, err := json.Marshal(example)
		if err != nil {
			t.Fatal(err)
		}
		v := reflect.New(reflect.TypeOf(mirror))
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			t.Errorf("%s: decode the example into %T: %v", where, mirror, err)
			return
		}
		again, err := json.Marshal(v.Interface())
		if err != nil {
			t.Errorf("%s: encode %T: %v", where, mirror, err)
			return
		}
		if d := cmp.Diff(normalize(t, raw), normalize(t, again)); d != "" {
			t.Errorf("%s: the example changed on its way through %T (-spec +client):\n%s", where, mirror, d)
		}
	}
	examples := func(where string, mt *openapi3.MediaType) {
		if mt == nil {
			return
		}
		if mt.Example != nil {
			check(where, mt.Schema, mt.Example)
		}
		for name, ex := range mt.Examples {
			check(where+" "+name, mt.Schema, ex.Value.Value)
		}
	}
	for path, item := range s.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil {
				examples(method+" "+path+" request", op.RequestBody.Value.Content.Get("application/json"))
			}
			for code, r := range op.Responses.Map() {
				examples(method+" "+path+" "+code, r.Value.Content.Get("application/json"))
				examples(method+" "+path+" "+code, r.Value.Content.Get("application/problem+json"))
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d examples checked; the walk is missing some", n)
	}
}

// normalize decodes JSON and spells times and durations one way, so that
// "30m" equals "30m0s" and ".250Z" equals ".25Z".
func normalize(tb testing.TB, raw []byte) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return "time " + t.UTC().Format(time.RFC3339Nano)
			}
			if d, err := time.ParseDuration(x); err == nil {
				return "duration " + d.String()
			}
		}
		return v
	}
	return walk(v)
}
