// A first job end to end against a real kairos: the Go test in e2e/
// (TestClientSuites) starts kairos and redis-server and runs this suite
// with KAIROS_URL and KAIROS_TOKEN (a tenant's token) set. Without them the
// suite is skipped, unless KAIROS_E2E_REQUIRED=1 makes that a failure.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Kairos, KairosError, verifyCallback } from "../dist/index.js";

const baseUrl = process.env.KAIROS_URL;
const token = process.env.KAIROS_TOKEN;
if (!baseUrl && process.env.KAIROS_E2E_REQUIRED === "1") {
  throw new Error("KAIROS_E2E_REQUIRED=1 but KAIROS_URL is not set");
}
const skip = baseUrl ? false : "set KAIROS_URL and KAIROS_TOKEN to run against a kairos";

/** receiver listens on loopback and hands each request, body as bytes, to the test. */
async function receiver() {
  const got = [];
  let wake = null;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
      if (wake) wake();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const next = async (ms) => {
    const deadline = Date.now() + ms;
    while (got.length === 0) {
      if (Date.now() > deadline) throw new Error(`no callback within ${ms} ms`);
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    return got.shift();
  };
  return { url: `http://127.0.0.1:${server.address().port}`, next, close: () => server.close() };
}

test("a first job, end to end, with its callback's signatures checked", { skip }, async () => {
  const kairos = new Kairos({ baseUrl, token });
  await kairos.healthz();
  const rcv = await receiver();
  try {
    const url = rcv.url + "/hooks/orders";
    const topic = await kairos.putTopic("ts-orders", { callback_url: url, max_attempts: 3 });
    assert.equal(topic.name, "ts-orders");

    const payload = { order: 42, note: "café ☕" };
    const job = await kairos.createJob("ts-orders", { id: "order-42", delay: "100ms", payload });
    assert.equal(job.id, "order-42");
    assert.equal(job.result ?? "created", "created");

    const cb = await rcv.next(15000);
    assert.equal(cb.url, "/hooks/orders");
    assert.equal(cb.headers["kairos-job-id"], "order-42");
    assert.deepEqual(JSON.parse(cb.body.toString("utf8")), payload);
    const keys = await kairos.getSigningKeys();
    const v = await verifyCallback(cb.headers, cb.body, { secrets: [keys.current, keys.next], url });
    assert.equal(v.claims.sub, url);
    // one byte changed and the check fails
    const tampered = Buffer.from(cb.body);
    tampered[tampered.length - 2] ^= 1;
    await assert.rejects(verifyCallback(cb.headers, tampered, { secrets: [keys.current, keys.next] }));

    let got;
    for (let i = 0; i < 100; i++) {
      got = await kairos.getJob("ts-orders", "order-42");
      if (got.state === "delivered") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(got.state, "delivered");
    assert.equal(got.attempts, 1);
  } finally {
    rcv.close();
  }
});

test("jobs and schedules against the real API", { skip }, async () => {
  const kairos = new Kairos({ baseUrl, token });
  await kairos.putTopic("ts-later", { callback_url: "http://127.0.0.1:9/never" });

  const batch = await kairos.createJobs("ts-later", [{ id: "a", delay: "1h" }, { id: "b", delay: "1h" }]);
  assert.equal(batch.created, 2);
  const moved = await kairos.rescheduleJob("ts-later", "a", { run_at: new Date(Date.now() + 7200e3) });
  assert.equal(moved.id, "a");
  await kairos.cancelJob("ts-later", "b");
  const list = await kairos.listJobs("ts-later", { state: "scheduled" });
  assert.deepEqual(list.jobs.map((j) => j.id), ["a"]);

  assert.equal((await kairos.getJob("ts-later", "b")).state, "cancelled");
  assert.deepEqual((await kairos.listJobs("ts-later", { state: "cancelled" })).jobs.map((j) => j.id), ["b"]);

  const err = await kairos.getJob("ts-later", "nope").catch((e) => e);
  assert.ok(err instanceof KairosError, String(err));
  assert.equal(err.status, 404);
  assert.ok(err.notFound);
  assert.match(err.type, /not-found/);

  const bad = await kairos.createJob("ts-later", { delay: "soon" }).catch((e) => e);
  assert.equal(bad.status, 400);
  assert.equal(bad.errors[0].field, "delay");

  const s = await kairos.putSchedule("ts-later", "daily", { cron: "0 9 * * *", timezone: "Europe/Paris" });
  assert.equal(s.next_runs.length, 5);
  assert.equal((await kairos.pauseSchedule("ts-later", "daily")).paused, true);
  assert.equal((await kairos.resumeSchedule("ts-later", "daily")).paused, false);
  const fired = await kairos.triggerSchedule("ts-later", "daily");
  assert.match(fired.id, /^daily@/);
  assert.equal((await kairos.listSchedules("ts-later")).schedules.length, 1);
  await kairos.deleteSchedule("ts-later", "daily");
  assert.ok(Array.isArray((await kairos.listDead()).jobs));
  assert.ok((await kairos.listTopics()).some((t) => t.name === "ts-later"));
});

test("labels and a bulk cancel against the real API", { skip }, async () => {
  const kairos = new Kairos({ baseUrl, token });
  await kairos.putTopic("ts-bulk", { callback_url: "http://127.0.0.1:9/never" });
  await kairos.createJobs("ts-bulk", [
    { id: "l1", delay: "1h", labels: { env: "qa" } },
    { id: "l2", delay: "1h", labels: { env: "qa", team: "a" } },
    { id: "l3", delay: "1h" },
  ]);
  const listed = (await kairos.listJobs("ts-bulk", { labels: { env: "qa", team: "a" } })).jobs;
  assert.deepEqual(listed.map((j) => j.id), ["l2"]);
  assert.deepEqual(listed[0].labels, { env: "qa", team: "a" });
  const started = await kairos.bulkJobs("ts-bulk", { action: "cancel", filter: { labels: { env: "qa" } } });
  let op = await kairos.getOperation(started.operation);
  for (let i = 0; op.state !== "done" && i < 200; i++) {
    await new Promise((r) => setTimeout(r, 50));
    op = await kairos.getOperation(op.id);
  }
  assert.deepEqual([op.state, op.done, op.failed], ["done", 2, 0]);
  assert.deepEqual((await kairos.listJobs("ts-bulk", { state: "scheduled" })).jobs.map((j) => j.id), ["l3"]);
  assert.deepEqual((await kairos.listJobs("ts-bulk", { state: "cancelled" })).jobs.map((j) => j.id).sort(), ["l1", "l2"]);
});

test("fan-out: a subscription with a filter gets a message, signed with its own secret", { skip }, async () => {
  const kairos = new Kairos({ baseUrl, token });
  const rcv = await receiver();
  try {
    const url = rcv.url + "/hooks/billing";
    await kairos.putTopic("ts-fanout", { callback_url: "http://127.0.0.1:9/topic-never" });
    const sub = await kairos.putSubscription("ts-fanout", "billing", {
      url, event_types: ["order.created"], filter: { "data.total": { $gte: 100 } }, signing: "subscription",
    });
    assert.deepEqual([sub.name, sub.signing, sub.paused, sub.breaker.state], ["billing", "subscription", false, "closed"]);
    // another subscription the message does not match, by its filter
    await kairos.putSubscription("ts-fanout", "small", { url: rcv.url + "/hooks/small", filter: { "data.total": { $lt: 100 } } });
    const bad = await kairos.putSubscription("ts-fanout", "bad", { url, filter: { "data.total": { $gt: {} } } }).catch((e) => e);
    assert.ok(bad instanceof KairosError, String(bad));
    assert.equal(bad.status, 400);
    assert.equal(bad.errors[0].field, "filter.data.total.$gt");

    const payload = { data: { order_id: 8412, total: 120 } };
    const pub = await kairos.publishMessage("ts-fanout", { id: "order-8412", event_type: "order.created", payload });
    assert.deepEqual(pub.deliveries, [{ subscription: "billing", job_id: "order-8412.billing" }]);

    const cb = await rcv.next(15000);
    assert.equal(cb.url, "/hooks/billing");
    assert.equal(cb.headers["kairos-subscription"], "billing");
    assert.equal(cb.headers["kairos-message-id"], "order-8412");
    assert.deepEqual(JSON.parse(cb.body.toString("utf8")), payload);
    const keys = await kairos.getSubscriptionSigningKeys("ts-fanout", "billing");
    const v = await verifyCallback(cb.headers, cb.body, { secrets: [keys.current, keys.next], url });
    assert.equal(v.claims.sub, url);
    // the tenant's secrets do not verify it: it is signed with the subscription's own
    const tenantKeys = await kairos.getSigningKeys();
    await assert.rejects(verifyCallback(cb.headers, cb.body, { secrets: [tenantKeys.current, tenantKeys.next] }));

    let msg;
    for (let i = 0; i < 100; i++) {
      msg = await kairos.getMessage("ts-fanout", "order-8412");
      if (msg.deliveries[0]?.state === "delivered") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(msg.event_type, "order.created");
    assert.deepEqual(msg.payload, payload);
    assert.deepEqual(msg.deliveries.map((d) => [d.subscription, d.job_id, d.state, d.attempts]), [["billing", "order-8412.billing", "delivered", 1]]);
    const listed = await kairos.listSubscriptions("ts-fanout");
    assert.deepEqual(listed.map((s) => s.name), ["billing", "small"]);
    let counts;
    for (let i = 0; i < 100; i++) {
      counts = (await kairos.getSubscription("ts-fanout", "billing")).counts;
      if (counts.delivered === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(counts, { pending: 0, delivered: 1, dead: 0 });

    // pause, resume, rotate and delete
    assert.equal((await kairos.pauseSubscription("ts-fanout", "billing")).paused, true);
    assert.equal((await kairos.resumeSubscription("ts-fanout", "billing")).paused, false);
    const rotated = await kairos.rotateSubscriptionSigningKeys("ts-fanout", "billing");
    assert.equal(rotated.current, keys.next);
    const noOwn = await kairos.getSubscriptionSigningKeys("ts-fanout", "small").catch((e) => e);
    assert.equal(noOwn.status, 409);
    const deleted = await kairos.deleteSubscription("ts-fanout", "small");
    assert.equal(deleted.subscription, "small");
    assert.equal((await kairos.getSubscription("ts-fanout", "small").catch((e) => e)).status, 404);
    const none = await kairos.publishMessage("ts-fanout", { event_type: "order.refunded", payload: {} });
    assert.deepEqual(none.deliveries, []);
  } finally {
    rcv.close();
  }
});
