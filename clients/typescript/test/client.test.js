// The client's unit tests: every operation of openapi.yaml has a method
// that sends that operation's method and path, the routes DESIGN.md adds
// beyond it likewise, errors carry the problem's fields, and a callback
// signed as kairos signs verifies (and a tampered one does not).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kairos, KairosError, VerificationError, verifyCallback, signCallback, parseRetryAfter } from "../dist/index.js";
import { operations, notAPICalls, schemaProperties } from "./lib/spec.js";

// calls sends each operation through the client, by operationId.
const calls = {
  healthz: (c) => c.healthz(),
  readyz: (c) => c.readyz(),
  listTopics: (c) => c.listTopics(),
  putTopic: (c) => c.putTopic("orders", { callback_url: "https://hooks.example.com/orders", rate: { limit: 50, period: "1s" } }),
  getTopic: (c) => c.getTopic("orders"),
  deleteTopic: (c) => c.deleteTopic("orders"),
  pauseTopic: (c) => c.pauseTopic("orders"),
  resumeTopic: (c) => c.resumeTopic("orders"),
  createJob: (c) => c.createJob("orders", { id: "order-1", run_at: new Date("2026-11-21T10:30:00.250Z"), payload: { order: 1 } }),
  createJobs: (c) => c.createJobs("orders", [{ delay: "30m" }, { id: "b" }]),
  listJobs: (c) => c.listJobs("orders", { state: "dead", labels: { region: "eu" }, limit: 10, cursor: "abc" }),
  getJob: (c) => c.getJob("orders", "order-1"),
  rescheduleJob: (c) => c.rescheduleJob("orders", "order-1", { delay: "1h" }),
  cancelJob: (c) => c.cancelJob("orders", "order-1"),
  retryJob: (c) => c.retryJob("orders", "order-1"),
  listDead: (c) => c.listDead({ limit: 5 }),
  putSchedule: (c) => c.putSchedule("reports", "daily", { cron: "0 9 * * MON-FRI", timezone: "Europe/Paris" }),
  getSchedule: (c) => c.getSchedule("reports", "daily"),
  listSchedules: (c) => c.listSchedules("reports", { limit: 10 }),
  deleteSchedule: (c) => c.deleteSchedule("reports", "daily"),
  pauseSchedule: (c) => c.pauseSchedule("reports", "daily"),
  resumeSchedule: (c) => c.resumeSchedule("reports", "daily"),
  triggerSchedule: (c) => c.triggerSchedule("reports", "daily"),
  getSigningKeys: (c) => c.getSigningKeys(),
  rotateSigningKeys: (c) => c.rotateSigningKeys(),
  getStats: (c) => c.getStats(),
  tick: (c) => c.tick("55s"),
  getQuota: (c) => c.getQuota("acme"),
  putQuota: (c) => c.putQuota("acme", { max_pending: 10000 }),
  deleteQuota: (c) => c.deleteQuota("acme"),
  revokeTokens: (c) => c.revokeTokens("acme", { jti: "n3oZ" }),
  listSubscriptions: (c) => c.listSubscriptions("orders"),
  putSubscription: (c) => c.putSubscription("orders", "billing", {
    url: "https://billing.example.com/hooks/orders", event_types: ["order.created"],
    filter: { "data.total": { $gte: 100 } }, rate: { limit: 10, period: "1s" }, signing: "subscription",
  }),
  getSubscription: (c) => c.getSubscription("orders", "billing"),
  deleteSubscription: (c) => c.deleteSubscription("orders", "billing"),
  pauseSubscription: (c) => c.pauseSubscription("orders", "billing"),
  resumeSubscription: (c) => c.resumeSubscription("orders", "billing"),
  getSubscriptionSigningKeys: (c) => c.getSubscriptionSigningKeys("orders", "billing"),
  rotateSubscriptionSigningKeys: (c) => c.rotateSubscriptionSigningKeys("orders", "billing"),
  publishMessage: (c) => c.publishMessage("orders", { event_type: "order.created", payload: { data: { total: 120 } }, run_at: new Date("2026-11-21T10:15:00Z") }),
  getMessage: (c) => c.getMessage("orders", "order-8412-created"),
};

// designRoutes are the routes DESIGN.md names that openapi.yaml may not
// have yet: the method and path each call must send.
const designRoutes = {
  bulkJobs: [(c) => c.bulkJobs("orders", { action: "cancel", filter: { labels: { region: "eu" } } }), "POST", "/v1/topics/orders/jobs/bulk"],
  getOperation: [(c) => c.getOperation("op-1"), "GET", "/v1/operations/op-1"],
  backfillSchedule: [(c) => c.backfillSchedule("reports", "daily", { from: "2026-11-01T00:00:00Z", to: new Date("2026-11-08T00:00:00Z") }), "POST", "/v1/topics/reports/schedules/daily/backfill"],
  mintToken: [(c) => c.mintToken({ tenant: "acme", ttl: "24h" }), "POST", "/v1/tokens"],
  getTopicSigningKeys: [(c) => c.getTopicSigningKeys("orders"), "GET", "/v1/topics/orders/signing-keys"],
  rotateTopicSigningKeys: [(c) => c.rotateTopicSigningKeys("orders"), "POST", "/v1/topics/orders/signing-keys/rotate"],
  replayJob: [(c) => c.replayJob("orders", "order-1"), "POST", "/v1/topics/orders/jobs/order-1/retry"],
};

/** recorder is a fetch that records requests and answers with status and body. */
function recorder(status = 200, body = "{}", headers = { "content-type": "application/json" }) {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url: new URL(url), method: init.method, headers: init.headers, body: init.body });
    return new Response(status === 204 ? null : body, { status, headers });
  };
  return { seen, fetch };
}

/** matches reports whether path fits the openapi template ("/v1/topics/{topic}"). */
function matches(template, path) {
  const re = new RegExp("^" + template.replace(/\{[^}]+\}/g, "[^/]+") + "$");
  return re.test(path);
}

test("every operation of openapi.yaml has a method that sends it", async () => {
  const ops = operations();
  assert.ok(Object.keys(ops).length >= 30, `only ${Object.keys(ops).length} operations read from openapi.yaml`);
  const missing = Object.keys(ops).filter((id) => !calls[id] && !notAPICalls[id] && !designRoutes[id]).sort();
  assert.deepEqual(missing, [], "operations of openapi.yaml with no call in this test (add a client method and a call)");
  for (const id of Object.keys(calls)) assert.ok(ops[id], `calls names ${id}, which openapi.yaml does not have`);
  for (const [id, op] of Object.entries(ops)) {
    if (notAPICalls[id]) continue;
    const { seen, fetch } = recorder();
    const c = new Kairos({ baseUrl: "http://kairos.test/", token: "t0ken", fetch });
    await (calls[id] ?? designRoutes[id][0])(c);
    assert.equal(seen.length, 1, `${id} sent ${seen.length} requests`);
    const r = seen[0];
    assert.equal(r.method, op.method, `${id}: method`);
    assert.ok(matches(op.path, r.url.pathname), `${id}: path ${r.url.pathname}, want ${op.path}`);
    assert.equal(r.headers.Authorization, "Bearer t0ken");
  }
});

test("the routes DESIGN.md names beyond openapi.yaml", async () => {
  for (const [id, [call, method, path]] of Object.entries(designRoutes)) {
    const { seen, fetch } = recorder(202, '{"operation":"op-1"}');
    await call(new Kairos({ baseUrl: "http://kairos.test", fetch }));
    assert.equal(seen[0].method, method, id);
    assert.equal(seen[0].url.pathname, path, id);
  }
});

test("bodies and queries as the wire spells them", async () => {
  const { seen, fetch } = recorder();
  const c = new Kairos({ baseUrl: "http://kairos.test", fetch, tenant: "acme", revealHeaders: true });
  await calls.createJob(c);
  await calls.listJobs(c);
  await c.getJob("orders", "a/b");
  await designRoutes.bulkJobs[0](c);
  assert.deepEqual(JSON.parse(seen[0].body), { id: "order-1", run_at: "2026-11-21T10:30:00.250Z", payload: { order: 1 } });
  assert.equal(seen[0].headers["Content-Type"], "application/json");
  assert.equal(seen[1].url.search, "?state=dead&label=region%3Aeu&limit=10&cursor=abc&tenant=acme");
  assert.equal(seen[2].url.pathname, "/v1/topics/orders/jobs/a%2Fb");
  assert.equal(seen[2].url.searchParams.get("reveal"), "headers");
  assert.deepEqual(JSON.parse(seen[3].body), { action: "cancel", filter: { labels: { region: "eu" } } });
});

test("fan-out calls send the bodies, paths and queries openapi.yaml names", async () => {
  const { seen, fetch } = recorder(200, '{"subscriptions": [{"name": "billing"}]}');
  const c = new Kairos({ baseUrl: "http://kairos.test", fetch, revealHeaders: true });
  const ops = operations();
  await calls.putSubscription(c);
  await calls.publishMessage(c);
  await c.getSubscription("orders", "billing");
  await c.getMessage("orders", "msg/1");
  const listed = await c.listSubscriptions("orders");
  assert.deepEqual(JSON.parse(seen[0].body), {
    url: "https://billing.example.com/hooks/orders", event_types: ["order.created"],
    filter: { "data.total": { $gte: 100 } }, rate: { limit: 10, period: "1s" }, signing: "subscription",
  });
  assert.ok(matches(ops.putSubscription.path, seen[0].url.pathname));
  assert.deepEqual(JSON.parse(seen[1].body), { event_type: "order.created", payload: { data: { total: 120 } }, run_at: "2026-11-21T10:15:00.000Z" });
  assert.equal(seen[1].url.pathname, "/v1/topics/orders/messages");
  assert.equal(seen[2].url.searchParams.get("reveal"), "headers");
  assert.equal(seen[3].url.pathname, "/v1/topics/orders/messages/msg%2F1");
  assert.deepEqual(listed, [{ name: "billing" }]);
  for (const r of seen.slice(2)) assert.equal(r.body, undefined, "a read sends no body");
});

test("every field of the fan-out request schemas is one the client's types name", async () => {
  // the request types' fields, as src/types.ts declares them, against the schemas' properties
  const { readFileSync } = await import("node:fs");
  const src = readFileSync(new URL("../src/types.ts", import.meta.url), "utf8");
  const fieldsOf = (iface) => {
    const m = new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`).exec(src);
    assert.ok(m, `no interface ${iface} in src/types.ts`);
    return [...m[1].matchAll(/^  (\w+)\??:/gm)].map((f) => f[1]).sort();
  };
  for (const [iface, schema] of [["SubscriptionRequest", "SubscriptionRequest"], ["Subscription", "Subscription"],
    ["MessageRequest", "MessageRequest"], ["Published", "Published"], ["Message", "Message"], ["SubscriptionDeleted", "SubscriptionDeleted"],
    ["DeliveryRef", "DeliveryRef"]]) {
    assert.deepEqual(fieldsOf(iface), schemaProperties(schema), `${iface} against components.schemas.${schema}`);
  }
});

test("a refused call rejects with the problem's fields", async () => {
  const problem = {
    type: "urn:kairos:problem:validation", title: "Invalid request", status: 400, detail: "1 field is invalid",
    errors: [{ field: "delay", message: "not a duration: want Go syntax such as 90s, or days such as 7d" }],
  };
  const { fetch } = recorder(400, JSON.stringify(problem), { "content-type": "application/problem+json" });
  const err = await new Kairos({ baseUrl: "http://kairos.test", fetch }).createJob("orders", { delay: "soon" }).catch((e) => e);
  assert.ok(err instanceof KairosError);
  assert.equal(err.status, 400);
  assert.equal(err.type, problem.type);
  assert.equal(err.title, problem.title);
  assert.equal(err.detail, problem.detail);
  assert.deepEqual(err.errors, problem.errors);

  const busy = recorder(503, JSON.stringify({ type: "urn:kairos:problem:unavailable", title: "Service Unavailable", status: 503 }),
    { "content-type": "application/problem+json", "retry-after": "2" });
  const e503 = await new Kairos({ baseUrl: "http://kairos.test", fetch: busy.fetch }).getJob("t", "x").catch((e) => e);
  assert.equal(e503.status, 503);
  assert.equal(e503.retryAfter, 2);

  const html = recorder(502, "<html>bad gateway</html>", { "content-type": "text/html" });
  const e502 = await new Kairos({ baseUrl: "http://kairos.test", fetch: html.fetch }).getJob("t", "x").catch((e) => e);
  assert.equal(e502.status, 502);
  assert.equal(e502.detail, "<html>bad gateway</html>");
  assert.equal(parseRetryAfter(new Date(Date.now() + 5000).toUTCString()) >= 4, true);
});

const secret = "whsec_" + Buffer.alloc(32, 7).toString("base64");
const other = "whsec_" + Buffer.alloc(32, 9).toString("base64");

test("a callback signed as kairos signs verifies; a tampered one does not", async () => {
  const body = '{ "order": 42,  "note": "caf\\u00e9" }';
  const url = "https://hooks.example.com/orders";
  const h = await signCallback(secret, body, { msgId: "msg_1", url });
  const v = await verifyCallback(h, body, { secrets: [other, secret], url });
  assert.equal(v.webhookId, "msg_1");
  assert.equal(v.claims.sub, url);
  // a fetch Headers works as well as node's header object
  await verifyCallback(new Headers(h), new TextEncoder().encode(body), { secrets: [secret] });

  const refused = async (headers, b, opts, reason) => {
    const err = await verifyCallback(headers, b, { secrets: [secret], ...opts }).catch((e) => e);
    assert.ok(err instanceof VerificationError, `want a VerificationError, got ${err}`);
    assert.equal(err.reason, reason, err.message);
    return err;
  };
  await refused(h, body.replace("42", "43"), {}, "invalid");
  await refused(h, body, { secrets: [other] }, "invalid");
  await refused(h, body, { url: "https://evil.example.com/" }, "invalid");
  await refused({ ...h, "kairos-signature": undefined }, body, {}, "missing");
  await refused({ ...h, "webhook-signature": undefined }, body, {}, "missing");
  const stale = await signCallback(secret, body, { msgId: "msg_1", url, timestamp: Math.floor(Date.now() / 1000) - 600 });
  await refused(stale, body, {}, "timestamp");
  // the JWT alone altered: its body claim no longer matches
  const swapped = await signCallback(secret, "{}", { msgId: "msg_1", url });
  await refused({ ...h, "kairos-signature": swapped["kairos-signature"] }, body, {}, "invalid");
  // alg none is refused
  const [, p] = h["kairos-signature"].split(".");
  const none = Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url") + "." + p + ".";
  await refused({ ...h, "kairos-signature": none }, body, {}, "invalid");
});

// A notification's answer reads back as bytes: text as UTF-8, base64 decoded, and an
// encoding kairos does not send is refused.
test("notificationBody decodes a notification's response", async () => {
  const { notificationBody } = await import("../dist/index.js");
  const base = { type: "job.delivered", job_id: "a", topic: "t", tenant: "x", attempt: 1, status: 200, response_headers: {} };
  assert.deepEqual(notificationBody({ ...base, response: "café" }), new TextEncoder().encode("café"));
  assert.deepEqual(notificationBody({ ...base, response: "/wD+eA==", response_encoding: "base64" }), new Uint8Array([0xff, 0x00, 0xfe, 0x78]));
  assert.throws(() => notificationBody({ ...base, response: "x", response_encoding: "gzip" }), /unknown response_encoding/);
});
