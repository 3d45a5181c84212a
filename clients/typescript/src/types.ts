// The requests and answers of the kairos API (v1), as openapi.yaml and
// DESIGN.md spell them. Field names are the wire's (snake_case), so that
// what you read here is what goes over HTTP.

/** A duration in Go syntax plus days: "90s", "1.5h", "250ms", "7d", "1d12h". */
export type Duration = string;

/** A time: a Date, or an RFC 3339 string. Answers always carry strings (UTC, milliseconds). */
export type TimeInput = Date | string;

/** An RFC 3339 time as kairos writes it: "2026-11-21T10:30:00.250Z". */
export type Time = string;

/** Any JSON value: a job's payload, sent byte for byte as the callback's body. */
export type JSONValue = string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };

/** Where a job is in its life. */
export type State = "scheduled" | "ready" | "active" | "retrying" | "delivered" | "dead" | "expired" | "cancelled";

/** job: a topic's own job; notification: a failure or success notification kairos made of another job's end. */
export type JobKind = "job" | "notification";

/** The HTTP method of a callback. */
export type Method = "POST" | "PUT" | "PATCH" | "DELETE" | "GET" | "post" | "put" | "patch" | "delete" | "get";

/** Backoff bounds the waits between failed attempts (full jitter). */
export interface Backoff {
  initial?: Duration;
  max?: Duration;
}

/** A rate limit: at most `limit` deliveries per `period`. */
export interface Rate {
  limit: number;
  period: Duration;
}

/** Turns a topic's circuit breaker on. */
export interface BreakerRequest {
  failures?: number;
  cooldown?: Duration;
}

/**
 * A topic's or a subscription's circuit breaker as the API shows it: failures and
 * cooldown are absent when none is configured (it then reads "closed" and never opens).
 */
export interface Breaker {
  failures?: number;
  cooldown?: Duration;
  state: "closed" | "open" | "half-open";
  open_until?: Time;
}

/** The body of putTopic. */
export interface TopicRequest {
  callback_url: string;
  method?: Method;
  headers?: Record<string, string>;
  timeout?: Duration;
  max_attempts?: number;
  backoff?: Backoff;
  concurrency?: number;
  rate?: Rate;
  parallelism?: number;
  flow_key?: string;
  breaker?: BreakerRequest;
  failure_url?: string;
  success_url?: string;
  response_bytes?: number;
  /** "tenant" (default): the tenant's secret signs; "topic": a secret of the topic's own. */
  signing?: "tenant" | "topic";
}

/** A topic, with kairos's defaults filled in. */
export interface Topic {
  name: string;
  tenant: string;
  callback_url?: string;
  method: string;
  headers?: Record<string, string>;
  timeout: Duration;
  max_attempts: number;
  backoff: Backoff;
  concurrency: number;
  rate?: Rate;
  parallelism?: number;
  flow_key?: string;
  breaker?: Breaker;
  failure_url?: string;
  success_url?: string;
  response_bytes?: number;
  signing?: "tenant" | "topic";
  paused: boolean;
  created_at: Time;
  updated_at: Time;
}

/** The body of createJob, and each item of createJobs. */
export interface JobRequest {
  id?: string;
  /** When to fire; neither run_at nor delay means now. */
  run_at?: TimeInput;
  delay?: Duration;
  payload?: JSONValue;
  callback_url?: string;
  method?: Method;
  headers?: Record<string, string>;
  max_attempts?: number;
  timeout?: Duration;
  backoff?: Backoff;
  flow_key?: string;
  failure_url?: string;
  success_url?: string;
  /** Up to 10 pairs; key [a-z0-9_.-]{1,32}, value up to 64 characters. */
  labels?: Record<string, string>;
  /** 0 to 9, default 0: higher goes first when a flow limit holds jobs back. */
  priority?: number;
  expires_at?: TimeInput;
  ttl?: Duration;
  on_conflict?: "replace" | "keep" | "debounce";
  max_delay?: Duration;
  dedup_key?: string;
  dedup_window?: Duration;
}

/** The body of rescheduleJob: one of run_at and delay. */
export interface RescheduleRequest {
  run_at?: TimeInput;
  delay?: Duration;
}

/** One callback attempt, or an event ("replay") in a job's log. */
export interface Attempt {
  n: number;
  event?: string;
  at: Time;
  duration_ms: number;
  status?: number;
  error?: string;
  response?: string;
  response_headers?: Record<string, string>;
}

/** A job as the API shows it. Lists and batch results carry no payload. */
export interface Job {
  id: string;
  topic: string;
  tenant: string;
  kind?: JobKind;
  state: State;
  run_at: Time;
  next_run_at?: Time;
  created_at: Time;
  done_at?: Time;
  attempts: number;
  max_attempts?: number;
  callback_url?: string;
  method?: string;
  headers?: Record<string, string>;
  timeout?: Duration;
  backoff?: Backoff;
  flow_key?: string;
  failure_url?: string;
  success_url?: string;
  labels?: Record<string, string>;
  priority?: number;
  expires_at?: Time;
  dedup_key?: string;
  payload?: JSONValue;
  last_attempt?: Attempt;
  attempt_log?: Attempt[];
  /**
   * Set in the answer to a create: "created", "replaced", "kept", "debounced" or "duplicate".
   * A duplicate whose first job's record is gone (cancelled, or past the retention period)
   * carries only id, topic, tenant and result.
   */
  result?: string;
}

/** A page of jobs, newest first; pass next_cursor back as cursor for the next. */
export interface JobList {
  jobs: Job[];
  next_cursor?: string;
}

/** Selects a page of a listing. */
export interface ListOptions {
  state?: State;
  /** Only jobs (kind "job") or only failure and success notifications ("notification"). */
  kind?: JobKind;
  /** Every label must match: {"region": "eu"} sends label=region:eu. */
  labels?: Record<string, string>;
  limit?: number;
  cursor?: string;
}

/** One job's outcome in a batch: job when created (201) or replaced (200), error otherwise. */
export interface BatchItem {
  index: number;
  status: number;
  job?: Job;
  error?: Problem;
}

/** The answer to createJobs. */
export interface BatchResult {
  created: number;
  /** Every 200: replaced, debounced, kept or duplicate. */
  replaced: number;
  /** Of replaced, the items kept as they were (on_conflict "keep"); absent when none. */
  kept?: number;
  /** Of replaced, the duplicates of their dedup_key; absent when none. */
  duplicate?: number;
  failed: number;
  results: BatchItem[];
}

/** What a bulk action touches; at least one field must be set. */
export interface BulkFilter {
  state?: State;
  labels?: Record<string, string>;
  run_at_from?: TimeInput;
  run_at_to?: TimeInput;
}

/** The body of bulkJobs. */
export interface BulkRequest {
  action: "cancel" | "replay";
  filter: BulkFilter;
}

/** A background operation (a bulk action) and how far it got. */
export interface Operation {
  id: string;
  topic: string;
  action: "cancel" | "replay";
  filter: BulkFilter;
  state: "running" | "done";
  /** An estimate while running; exactly done + failed once done. */
  matched: number;
  done: number;
  /** Jobs the action could not apply to when reached (being delivered, for a cancel). */
  failed: number;
  created_at: Time;
  finished_at?: Time;
}

/** The answer to bulkJobs: 202 with the operation (its id also as operation) to poll with getOperation. */
export interface BulkAccepted extends Operation {
  operation: string;
}

/** The body of putSchedule: cron or every, and the settings of its jobs. */
export interface ScheduleRequest {
  cron?: string;
  every?: Duration;
  timezone?: string;
  start_at?: TimeInput;
  end_at?: TimeInput;
  catch_up?: "one" | "none" | "all";
  paused?: boolean;
  payload?: JSONValue;
  callback_url?: string;
  method?: Method;
  headers?: Record<string, string>;
  max_attempts?: number;
  timeout?: Duration;
  backoff?: Backoff;
  labels?: Record<string, string>;
  overlap?: "allow" | "skip" | "buffer_one";
  jitter?: Duration;
  max_runs?: number;
}

/** The last occurrence a schedule fired. */
export interface LastRun {
  job_id?: string;
  at?: Time;
  trigger?: "pattern" | "manual" | "backfill";
  [key: string]: unknown;
}

/** A schedule as the API shows it. */
export interface Schedule {
  id: string;
  topic: string;
  tenant: string;
  cron?: string;
  every?: Duration;
  timezone: string;
  start_at?: Time;
  end_at?: Time;
  catch_up: "one" | "none" | "all";
  paused: boolean;
  state?: string;
  next_runs: Time[];
  pending_job?: string;
  last_run?: LastRun;
  payload?: JSONValue;
  callback_url?: string;
  method?: string;
  headers?: Record<string, string>;
  max_attempts?: number;
  timeout?: Duration;
  backoff?: Backoff;
  labels?: Record<string, string>;
  overlap?: string;
  jitter?: Duration;
  max_runs?: number;
  /** occurrences fired; counted with max_runs or an overlap rule other than allow */
  runs?: number;
  /** instants the overlap rule did not fire */
  skipped?: number;
  created_at: Time;
  updated_at: Time;
  result?: string;
}

/** A page of schedules. */
export interface ScheduleList {
  schedules: Schedule[];
  next_cursor?: string;
}

/** The body of backfillSchedule: fire each instant of the pattern in [from, to) once. */
export interface BackfillRequest {
  from: TimeInput;
  to: TimeInput;
}

/** The answer to backfillSchedule. */
export interface BackfillResult {
  instants: number;
}

/** Callback signing secrets in the Standard Webhooks whsec_ form; receivers accept both. */
export interface SigningKeys {
  current: string;
  next: string;
}

/** A message's event type: 1-100 characters of text, no control characters ("order.created"). */
export type EventType = string;

/**
 * A subscription's filter, matched against each message's payload: each key a dotted
 * path ("data.customer.tier"; a decimal segment indexes an array), each value a literal
 * (equal; against an array: contains it) or an object of operators $eq, $ne, $in, $nin,
 * $gt, $gte, $lt, $lte, $exists, $prefix; top-level $and / $or take lists of filters.
 * Every key must match.
 */
export type Filter = { [path: string]: JSONValue };

/** "topic" (default): signed as the topic signs; "subscription": a secret of its own. */
export type SubscriptionSigning = "topic" | "subscription";

/** The body of putSubscription: an endpoint of the topic's fan-out. */
export interface SubscriptionRequest {
  url: string;
  /** The message event types it receives (at most 50); absent: every message. */
  event_types?: EventType[];
  filter?: Filter;
  headers?: Record<string, string>;
  method?: Method;
  timeout?: Duration;
  max_attempts?: number;
  backoff?: Backoff;
  rate?: Rate;
  /** At most this many of its deliveries in flight, across every kairos process. */
  parallelism?: number;
  breaker?: BreakerRequest;
  /** Pause or resume it with the put; absent: it stays as it is. */
  paused?: boolean;
  description?: string;
  signing?: SubscriptionSigning;
}

/** A subscription's deliveries: pending (published, not yet ended), delivered, dead now. */
export interface SubscriptionCounts {
  pending: number;
  delivered: number;
  dead: number;
}

/** A subscription, with its counts and its breaker's state. */
export interface Subscription {
  name: string;
  topic: string;
  tenant: string;
  url: string;
  event_types?: EventType[];
  filter?: Filter;
  headers?: Record<string, string>;
  method?: string;
  timeout?: Duration;
  max_attempts?: number;
  backoff?: Backoff;
  rate?: Rate;
  parallelism?: number;
  breaker: Breaker;
  paused: boolean;
  description?: string;
  signing: SubscriptionSigning;
  counts: SubscriptionCounts;
  created_at: Time;
  updated_at: Time;
}

/** The answer to deleteSubscription: the bulk operation cancelling its pending deliveries (absent when the server cancelled them before answering). */
export interface SubscriptionDeleted {
  subscription: string;
  operation?: string;
}

/** The body of publishMessage; run_at, delay, labels, dedup, expiry and priority read as a job create's. */
export interface MessageRequest {
  id?: string;
  event_type?: EventType;
  /** Any JSON value, sent as each delivery's body. */
  payload?: JSONValue;
  /** When its deliveries fire; neither run_at nor delay means now. */
  run_at?: TimeInput;
  delay?: Duration;
  labels?: Record<string, string>;
  dedup_key?: string;
  dedup_window?: Duration;
  ttl?: Duration;
  expires_at?: TimeInput;
  priority?: number;
}

/** A message's delivery to one subscription: a job of the topic, id "<message id>.<sub>". */
export interface DeliveryRef {
  subscription: string;
  job_id: string;
}

/** The answer to publishMessage: 201, or 200 with result "duplicate" for a dedup_key taken within its window. */
export interface Published {
  id: string;
  topic: string;
  /** Absent only from a duplicate whose first message is gone. */
  run_at?: Time;
  deliveries: DeliveryRef[];
  result?: "duplicate";
}

/** A delivery and its job's state (no state once the job's record is gone). */
export interface Delivery {
  subscription: string;
  job_id: string;
  state?: State;
  attempts: number;
  next_run_at?: Time;
  done_at?: Time;
  last_attempt?: Attempt;
}

/** A published message, with each delivery's state. */
export interface Message {
  id: string;
  topic: string;
  tenant: string;
  event_type?: EventType;
  payload?: JSONValue;
  labels?: Record<string, string>;
  run_at: Time;
  created_at: Time;
  deliveries: Delivery[];
}

/** A tenant's quota. */
export interface Quota {
  tenant: string;
  max_pending: number;
  rate: Rate | null;
  burst?: number;
  pending: number;
  custom: boolean;
}

/** The body of putQuota. */
export interface QuotaRequest {
  max_pending?: number;
  rate?: Rate;
  burst?: number;
}

/** The body of revokeTokens: one of issued_before and jti. */
export interface RevocationRequest {
  issued_before?: TimeInput;
  jti?: string;
}

/** The answer to revokeTokens. */
export interface Revocation {
  tenant: string;
  issued_before?: Time;
  jti?: string;
}

/** The body of mintToken (admin only). */
export interface TokenRequest {
  tenant: string;
  admin?: boolean;
  ttl?: Duration;
}

/** A minted API token. */
export interface Token {
  token: string;
  jti: string;
  expires_at: Time;
}

/** The answer to tick: what one pass of due work did. */
export interface TickSummary {
  delivered: number;
  failed: number;
  dead: number;
  in_flight: number;
  next_due: Time | null;
  shards: number;
  seconds: number;
}

export interface Counts {
  scheduled: number;
  ready: number;
  active: number;
  retrying: number;
  delivered: number;
  dead: number;
  expired: number;
  cancelled: number;
}

export interface Lateness {
  samples: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface Recent {
  minutes: number;
  delivered: number;
  failed_attempts: number;
  dead: number;
  delivered_per_second: number;
  failed_per_second: number;
  lateness: Lateness;
}

export interface Occurrences {
  fired: number;
  delivered: number;
  dead: number;
  /** instants a schedule's overlap rule did not fire */
  skipped: number;
}

export interface TopicStats {
  tenant: string;
  topic: string;
  counts: Counts;
  occurrences: Occurrences;
  ready_list_length: number;
  recent: Recent;
  paused: boolean;
  breaker?: { state: string; open_until?: Time };
}

/** The answer to getStats. */
export interface Stats {
  at: Time;
  topics: TopicStats[];
  due_next_hour?: number[];
}

/** One invalid field of a validation problem: "delay", "jobs[2].run_at". */
export interface FieldError {
  field: string;
  message: string;
}

/** An error answer (RFC 9457 problem+json). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: FieldError[];
}

/** The answer of /healthz and /readyz. */
export interface Health {
  status: string;
}

/**
 * The body kairos POSTs, signed like a callback, to a success_url after a delivery
 * ("job.delivered") and to a failure_url when a job ends without one ("job.dead",
 * "job.expired"). `response` is the receiver's answer to the last attempt, whole up to
 * 64 KiB: text, or base64 when `response_encoding` is "base64" (notificationBody decodes it).
 */
export interface Notification {
  type: "job.delivered" | "job.dead" | "job.expired";
  job_id: string;
  topic: string;
  tenant: string;
  /** The attempt that ended the job; 0 for one that ended without an attempt. */
  attempt: number;
  /** The answer's HTTP status; 0 when there was none. */
  status: number;
  response_headers: Record<string, string>;
  response: string;
  response_encoding?: "base64";
  /** Failure notifications only. */
  state?: "dead" | "expired";
  error?: string;
  /** Failure notifications only: the fields they carried before the ones above. */
  attempts?: number;
  dead_at?: Time;
  last_attempt?: { n: number; at: Time; status?: number; error?: string; response?: string; duration_ms: number };
  expires_at?: Time;
}
