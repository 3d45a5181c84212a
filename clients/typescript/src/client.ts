import { KairosError, errorFrom } from "./errors.js";
import type {
  BackfillRequest, BackfillResult, BatchResult, BulkAccepted, BulkRequest, Health, Job, JobList,
  JobRequest, ListOptions, Message, MessageRequest, Operation, Published, Quota, QuotaRequest,
  RescheduleRequest, Revocation, RevocationRequest, Schedule, ScheduleList, ScheduleRequest,
  SigningKeys, Stats, Subscription, SubscriptionDeleted, SubscriptionRequest, TickSummary,
  Token, TokenRequest, Topic, TopicRequest, Duration,
} from "./types.js";

/** Options of a Kairos client. */
export interface KairosOptions {
  /** The server's base URL, such as "http://127.0.0.1:8080". */
  baseUrl: string;
  /** A bearer JWT (`kairos token --tenant NAME` prints one). */
  token?: string;
  /**
   * Makes an admin token act on one tenant (the tenant query parameter).
   * Without it, an admin's listTopics, listDead and getStats cover every tenant.
   */
  tenant?: string;
  /** Makes getTopic, getJob and getSubscription show the values of secret-looking headers (reveal=headers). */
  revealHeaders?: boolean;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Headers added to every request. */
  headers?: Record<string, string>;
  /** Aborts a call that takes longer, in milliseconds; default 30000, 0 for none. */
  timeoutMs?: number;
}

type Query = Record<string, string | number | string[] | undefined>;

interface Call {
  method: string;
  path: string;
  query?: Query;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

const seg = encodeURIComponent;

/**
 * Kairos is a client of the kairos API (v1). Each method is one call and
 * resolves to the answer's body (or nothing for a 204); a refused call
 * rejects with a KairosError carrying the problem's fields. The client
 * does not retry: a 503 or 429 says when to with KairosError.retryAfter;
 * retry a create with the same dedup_key, which holds for its window even
 * after the job was delivered.
 */
export class Kairos {
  readonly baseUrl: string;
  private readonly opts: KairosOptions;
  private readonly fetchFn: typeof fetch;

  constructor(opts: KairosOptions) {
    const u = new URL(opts.baseUrl); // throws on a malformed URL
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`kairos: baseUrl ${opts.baseUrl}: want http:// or https://`);
    }
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.opts = opts;
    const f = opts.fetch ?? globalThis.fetch;
    if (!f) throw new TypeError("kairos: no fetch in this runtime; pass options.fetch");
    this.fetchFn = f.bind(globalThis);
  }

  private async call<T>(c: Call): Promise<T> {
    const url = new URL(this.baseUrl + c.path);
    const q: Query = { ...c.query };
    if (c.path.startsWith("/v1/")) {
      if (this.opts.tenant) q.tenant = this.opts.tenant;
    }
    for (const [k, v] of Object.entries(q)) {
      if (v === undefined || v === "") continue;
      for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one));
    }
    const headers: Record<string, string> = { Accept: "application/json, application/problem+json", ...this.opts.headers };
    if (this.opts.token) headers.Authorization = `Bearer ${this.opts.token}`;
    let body: string | undefined;
    if (c.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(c.body); // a Date becomes its toISOString()
    }
    const timeout = this.opts.timeoutMs ?? 30000;
    const signals: AbortSignal[] = [];
    if (c.signal) signals.push(c.signal);
    if (timeout > 0) signals.push(AbortSignal.timeout(timeout));
    const init: RequestInit = { method: c.method, headers };
    if (body !== undefined) init.body = body;
    if (signals.length === 1) init.signal = signals[0]!;
    else if (signals.length > 1) init.signal = anySignal(signals);
    const resp = await this.fetchFn(url, init);
    if (resp.status >= 400) throw await errorFrom(resp);
    if (resp.status === 204) return undefined as T;
    const text = await resp.text();
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new KairosError({ type: "about:blank", title: "answer is not JSON", status: resp.status, detail: text.slice(0, 200) });
    }
  }

  private reveal(): Query {
    return this.opts.revealHeaders ? { reveal: "headers" } : {};
  }

  // Health

  /** GET /healthz: the process is up. */
  healthz(signal?: AbortSignal): Promise<Health> {
    return this.call({ method: "GET", path: "/healthz", signal });
  }

  /** GET /readyz: the process can serve (Redis answers and is a master); rejects with a 503 otherwise. */
  readyz(signal?: AbortSignal): Promise<Health> {
    return this.call({ method: "GET", path: "/readyz", signal });
  }

  // Topics

  /** GET /v1/topics. */
  async listTopics(signal?: AbortSignal): Promise<Topic[]> {
    const r = await this.call<{ topics: Topic[] }>({ method: "GET", path: "/v1/topics", signal });
    return r.topics;
  }

  /** PUT /v1/topics/{topic}: creates or replaces a topic. */
  putTopic(topic: string, req: TopicRequest, signal?: AbortSignal): Promise<Topic> {
    return this.call({ method: "PUT", path: `/v1/topics/${seg(topic)}`, body: req, signal });
  }

  /** GET /v1/topics/{topic}. */
  getTopic(topic: string, signal?: AbortSignal): Promise<Topic> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}`, query: this.reveal(), signal });
  }

  /** DELETE /v1/topics/{topic}. */
  deleteTopic(topic: string, signal?: AbortSignal): Promise<void> {
    return this.call({ method: "DELETE", path: `/v1/topics/${seg(topic)}`, signal });
  }

  /** POST /v1/topics/{topic}/pause: stops deliveries; jobs keep coming due. */
  pauseTopic(topic: string, signal?: AbortSignal): Promise<Topic> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/pause`, signal });
  }

  /** POST /v1/topics/{topic}/resume. */
  resumeTopic(topic: string, signal?: AbortSignal): Promise<Topic> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/resume`, signal });
  }

  /** GET /v1/topics/{topic}/signing-keys: the secrets of a topic with "signing": "topic". */
  getTopicSigningKeys(topic: string, signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/signing-keys`, signal });
  }

  /** POST /v1/topics/{topic}/signing-keys/rotate. */
  rotateTopicSigningKeys(topic: string, signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/signing-keys/rotate`, signal });
  }

  // Jobs

  /** POST /v1/topics/{topic}/jobs: 201 with the job, or 200 with result for a replace, keep, debounce or duplicate. */
  createJob(topic: string, req: JobRequest, signal?: AbortSignal): Promise<Job> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/jobs`, body: req, signal });
  }

  /**
   * POST /v1/topics/{topic}/jobs/batch: up to 1000 jobs in one call, with
   * a result per job. A batch where some failed resolves (207); one where
   * all failed rejects.
   */
  createJobs(topic: string, jobs: JobRequest[], signal?: AbortSignal): Promise<BatchResult> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/jobs/batch`, body: { jobs }, signal });
  }

  /** GET /v1/topics/{topic}/jobs: a page of jobs, newest first. */
  listJobs(topic: string, opts: ListOptions = {}, signal?: AbortSignal): Promise<JobList> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/jobs`, query: listQuery(opts), signal });
  }

  /** GET /v1/topics/{topic}/jobs/{id}: state, attempts, attempt_log, next run. */
  getJob(topic: string, id: string, signal?: AbortSignal): Promise<Job> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/jobs/${seg(id)}`, query: this.reveal(), signal });
  }

  /** PATCH /v1/topics/{topic}/jobs/{id}: moves a pending job to run_at or now + delay. */
  rescheduleJob(topic: string, id: string, req: RescheduleRequest, signal?: AbortSignal): Promise<Job> {
    return this.call({ method: "PATCH", path: `/v1/topics/${seg(topic)}/jobs/${seg(id)}`, body: req, signal });
  }

  /** DELETE /v1/topics/{topic}/jobs/{id}: cancels a job that has not been delivered (it stays readable as cancelled for the retention period). */
  cancelJob(topic: string, id: string, signal?: AbortSignal): Promise<void> {
    return this.call({ method: "DELETE", path: `/v1/topics/${seg(topic)}/jobs/${seg(id)}`, signal });
  }

  /** POST /v1/topics/{topic}/jobs/{id}/retry: replays a dead or expired job now. */
  retryJob(topic: string, id: string, signal?: AbortSignal): Promise<Job> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/jobs/${seg(id)}/retry`, signal });
  }

  /** replayJob is retryJob: replays a dead or expired job now. */
  replayJob(topic: string, id: string, signal?: AbortSignal): Promise<Job> {
    return this.retryJob(topic, id, signal);
  }

  /**
   * POST /v1/topics/{topic}/jobs/bulk: cancels or replays every job the
   * filter matches, in the background; poll getOperation with the answer's
   * operation id.
   */
  bulkJobs(topic: string, req: BulkRequest, signal?: AbortSignal): Promise<BulkAccepted> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/jobs/bulk`, body: req, signal });
  }

  /** GET /v1/operations/{id}: how far a bulk action got. */
  getOperation(id: string, signal?: AbortSignal): Promise<Operation> {
    return this.call({ method: "GET", path: `/v1/operations/${seg(id)}`, signal });
  }

  /** GET /v1/dead: the dead jobs of every topic, most recently dead first. */
  listDead(opts: Omit<ListOptions, "state"> = {}, signal?: AbortSignal): Promise<JobList> {
    return this.call({ method: "GET", path: "/v1/dead", query: listQuery(opts), signal });
  }

  // Schedules

  /** PUT /v1/topics/{topic}/schedules/{id}: creates or replaces a schedule. */
  putSchedule(topic: string, id: string, req: ScheduleRequest, signal?: AbortSignal): Promise<Schedule> {
    return this.call({ method: "PUT", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}`, body: req, signal });
  }

  /** GET /v1/topics/{topic}/schedules/{id}. */
  getSchedule(topic: string, id: string, signal?: AbortSignal): Promise<Schedule> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}`, signal });
  }

  /** GET /v1/topics/{topic}/schedules. */
  listSchedules(topic: string, opts: Pick<ListOptions, "limit" | "cursor"> = {}, signal?: AbortSignal): Promise<ScheduleList> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/schedules`, query: listQuery(opts), signal });
  }

  /** DELETE /v1/topics/{topic}/schedules/{id}. */
  deleteSchedule(topic: string, id: string, signal?: AbortSignal): Promise<void> {
    return this.call({ method: "DELETE", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}`, signal });
  }

  /** POST /v1/topics/{topic}/schedules/{id}/pause. */
  pauseSchedule(topic: string, id: string, signal?: AbortSignal): Promise<Schedule> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}/pause`, signal });
  }

  /** POST /v1/topics/{topic}/schedules/{id}/resume. */
  resumeSchedule(topic: string, id: string, signal?: AbortSignal): Promise<Schedule> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}/resume`, signal });
  }

  /** POST /v1/topics/{topic}/schedules/{id}/trigger: fires one occurrence now. */
  triggerSchedule(topic: string, id: string, signal?: AbortSignal): Promise<Job> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}/trigger`, signal });
  }

  /** POST /v1/topics/{topic}/schedules/{id}/backfill: fires each instant of the pattern in [from, to) once. */
  backfillSchedule(topic: string, id: string, req: BackfillRequest, signal?: AbortSignal): Promise<BackfillResult> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/schedules/${seg(id)}/backfill`, body: req, signal });
  }

  // Fan-out: subscriptions and messages

  /** GET /v1/topics/{topic}/subscriptions: the topic's subscriptions by name, with counts and breaker state. */
  async listSubscriptions(topic: string, signal?: AbortSignal): Promise<Subscription[]> {
    const r = await this.call<{ subscriptions: Subscription[] }>({ method: "GET", path: `/v1/topics/${seg(topic)}/subscriptions`, signal });
    return r.subscriptions;
  }

  /**
   * PUT /v1/topics/{topic}/subscriptions/{sub}: registers or replaces a
   * subscription (and registers the topic when it has none). A filter that
   * does not parse rejects with a 400 naming its path.
   */
  putSubscription(topic: string, sub: string, req: SubscriptionRequest, signal?: AbortSignal): Promise<Subscription> {
    return this.call({ method: "PUT", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}`, body: req, signal });
  }

  /** GET /v1/topics/{topic}/subscriptions/{sub}: with its counts and breaker state. */
  getSubscription(topic: string, sub: string, signal?: AbortSignal): Promise<Subscription> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}`, query: this.reveal(), signal });
  }

  /**
   * DELETE /v1/topics/{topic}/subscriptions/{sub}: it goes at once; a bulk
   * operation (getOperation) cancels its pending deliveries.
   */
  deleteSubscription(topic: string, sub: string, signal?: AbortSignal): Promise<SubscriptionDeleted> {
    return this.call({ method: "DELETE", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}`, signal });
  }

  /** POST /v1/topics/{topic}/subscriptions/{sub}/pause: its deliveries wait, parked; the topic's other subscriptions go on. */
  pauseSubscription(topic: string, sub: string, signal?: AbortSignal): Promise<Subscription> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}/pause`, signal });
  }

  /** POST /v1/topics/{topic}/subscriptions/{sub}/resume: its parked deliveries are filed again at their run_at. */
  resumeSubscription(topic: string, sub: string, signal?: AbortSignal): Promise<Subscription> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}/resume`, signal });
  }

  /** GET /v1/topics/{topic}/subscriptions/{sub}/signing-keys: the own secrets of one with "signing": "subscription" (409 otherwise). */
  getSubscriptionSigningKeys(topic: string, sub: string, signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}/signing-keys`, signal });
  }

  /** POST /v1/topics/{topic}/subscriptions/{sub}/signing-keys/rotate: next becomes current, a new next is drawn. */
  rotateSubscriptionSigningKeys(topic: string, sub: string, signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/subscriptions/${seg(sub)}/signing-keys/rotate`, signal });
  }

  /**
   * POST /v1/topics/{topic}/messages: each subscription the message matches
   * now gets a delivery, a job of the topic with id "<message id>.<sub>".
   */
  publishMessage(topic: string, req: MessageRequest, signal?: AbortSignal): Promise<Published> {
    return this.call({ method: "POST", path: `/v1/topics/${seg(topic)}/messages`, body: req, signal });
  }

  /** GET /v1/topics/{topic}/messages/{id}: the message and each delivery's state. */
  getMessage(topic: string, id: string, signal?: AbortSignal): Promise<Message> {
    return this.call({ method: "GET", path: `/v1/topics/${seg(topic)}/messages/${seg(id)}`, signal });
  }

  // Signing keys, stats, tick

  /** GET /v1/signing-keys: the tenant's callback signing secrets. */
  getSigningKeys(signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "GET", path: "/v1/signing-keys", signal });
  }

  /** POST /v1/signing-keys/rotate: next becomes current, a new next is made. */
  rotateSigningKeys(signal?: AbortSignal): Promise<SigningKeys> {
    return this.call({ method: "POST", path: "/v1/signing-keys/rotate", signal });
  }

  /** GET /v1/stats. */
  getStats(signal?: AbortSignal): Promise<Stats> {
    return this.call({ method: "GET", path: "/v1/stats", signal });
  }

  /** POST /v1/tick (admin): runs due work for up to `forDuration`. */
  tick(forDuration?: Duration, signal?: AbortSignal): Promise<TickSummary> {
    return this.call({ method: "POST", path: "/v1/tick", body: forDuration ? { for: forDuration } : {}, signal });
  }

  // Tenants (admin)

  /** POST /v1/tokens (admin): mints a token for a tenant. */
  mintToken(req: TokenRequest, signal?: AbortSignal): Promise<Token> {
    return this.call({ method: "POST", path: "/v1/tokens", body: req, signal });
  }

  /** GET /v1/tenants/{tenant}/quota. */
  getQuota(tenant: string, signal?: AbortSignal): Promise<Quota> {
    return this.call({ method: "GET", path: `/v1/tenants/${seg(tenant)}/quota`, signal });
  }

  /** PUT /v1/tenants/{tenant}/quota (admin). */
  putQuota(tenant: string, req: QuotaRequest, signal?: AbortSignal): Promise<Quota> {
    return this.call({ method: "PUT", path: `/v1/tenants/${seg(tenant)}/quota`, body: req, signal });
  }

  /** DELETE /v1/tenants/{tenant}/quota (admin): back to the defaults. */
  deleteQuota(tenant: string, signal?: AbortSignal): Promise<void> {
    return this.call({ method: "DELETE", path: `/v1/tenants/${seg(tenant)}/quota`, signal });
  }

  /** POST /v1/tenants/{tenant}/revocations (admin): revokes one token (jti) or all issued before a time. */
  revokeTokens(tenant: string, req: RevocationRequest, signal?: AbortSignal): Promise<Revocation> {
    return this.call({ method: "POST", path: `/v1/tenants/${seg(tenant)}/revocations`, body: req, signal });
  }
}

function listQuery(o: ListOptions): Query {
  const q: Query = {};
  if (o.state) q.state = o.state;
  if (o.kind) q.kind = o.kind;
  if (o.labels) q.label = Object.entries(o.labels).map(([k, v]) => `${k}:${v}`);
  if (o.limit) q.limit = o.limit;
  if (o.cursor) q.cursor = o.cursor;
  return q;
}

/** anySignal is AbortSignal.any, which Node has from 20.3. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as unknown as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const ctl = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      ctl.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => ctl.abort(s.reason), { once: true });
  }
  return ctl.signal;
}
