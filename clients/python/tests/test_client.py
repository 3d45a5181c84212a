"""The client's unit tests: every operation of openapi.yaml has a method
that sends its method and path, the routes DESIGN.md adds beyond it
likewise, errors carry the problem's fields, and a callback signed as kairos
signs verifies (and a tampered one does not)."""

from __future__ import annotations

import base64
import email.message
import io
import json
import re
import time
import unittest
import urllib.error
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Callable

from kairos_client import Kairos, KairosError, VerificationError, parse_retry_after, sign_callback, verify_callback

from .spec import NOT_API_CALLS, operations, schema_properties, snake

# CALLS sends each operation through the client, by operationId.
CALLS: dict[str, Callable[[Kairos], Any]] = {
    "healthz": lambda c: c.healthz(),
    "readyz": lambda c: c.readyz(),
    "listTopics": lambda c: c.list_topics(),
    "putTopic": lambda c: c.put_topic("orders", {"callback_url": "https://hooks.example.com/orders"}),
    "getTopic": lambda c: c.get_topic("orders"),
    "deleteTopic": lambda c: c.delete_topic("orders"),
    "pauseTopic": lambda c: c.pause_topic("orders"),
    "resumeTopic": lambda c: c.resume_topic("orders"),
    "createJob": lambda c: c.create_job("orders", {"id": "order-1", "payload": {"order": 1},
                                                   "run_at": datetime(2026, 11, 21, 10, 30, 0, 250000, timezone.utc)}),
    "createJobs": lambda c: c.create_jobs("orders", [{"delay": "30m"}, {"id": "b"}]),
    "listJobs": lambda c: c.list_jobs("orders", state="dead", labels={"region": "eu"}, limit=10, cursor="abc"),
    "getJob": lambda c: c.get_job("orders", "order-1"),
    "rescheduleJob": lambda c: c.reschedule_job("orders", "order-1", {"delay": "1h"}),
    "cancelJob": lambda c: c.cancel_job("orders", "order-1"),
    "retryJob": lambda c: c.retry_job("orders", "order-1"),
    "listDead": lambda c: c.list_dead(limit=5),
    "putSchedule": lambda c: c.put_schedule("reports", "daily", {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris"}),
    "getSchedule": lambda c: c.get_schedule("reports", "daily"),
    "listSchedules": lambda c: c.list_schedules("reports", limit=10),
    "deleteSchedule": lambda c: c.delete_schedule("reports", "daily"),
    "pauseSchedule": lambda c: c.pause_schedule("reports", "daily"),
    "resumeSchedule": lambda c: c.resume_schedule("reports", "daily"),
    "triggerSchedule": lambda c: c.trigger_schedule("reports", "daily"),
    "getSigningKeys": lambda c: c.get_signing_keys(),
    "rotateSigningKeys": lambda c: c.rotate_signing_keys(),
    "getStats": lambda c: c.get_stats(),
    "tick": lambda c: c.tick("55s"),
    "getQuota": lambda c: c.get_quota("acme"),
    "putQuota": lambda c: c.put_quota("acme", {"max_pending": 10000}),
    "deleteQuota": lambda c: c.delete_quota("acme"),
    "revokeTokens": lambda c: c.revoke_tokens("acme", {"jti": "n3oZ"}),
    "listSubscriptions": lambda c: c.list_subscriptions("orders"),
    "putSubscription": lambda c: c.put_subscription("orders", "billing", {
        "url": "https://billing.example.com/hooks/orders", "event_types": ["order.created"],
        "filter": {"data.total": {"$gte": 100}}, "rate": {"limit": 10, "period": "1s"}, "signing": "subscription"}),
    "getSubscription": lambda c: c.get_subscription("orders", "billing"),
    "deleteSubscription": lambda c: c.delete_subscription("orders", "billing"),
    "pauseSubscription": lambda c: c.pause_subscription("orders", "billing"),
    "resumeSubscription": lambda c: c.resume_subscription("orders", "billing"),
    "getSubscriptionSigningKeys": lambda c: c.get_subscription_signing_keys("orders", "billing"),
    "rotateSubscriptionSigningKeys": lambda c: c.rotate_subscription_signing_keys("orders", "billing"),
    "publishMessage": lambda c: c.publish_message("orders", {"event_type": "order.created", "payload": {"data": {"total": 120}},
                                                             "run_at": datetime(2026, 11, 21, 10, 15, tzinfo=timezone.utc)}),
    "getMessage": lambda c: c.get_message("orders", "order-8412-created"),
}

# DESIGN_ROUTES are the routes DESIGN.md names that openapi.yaml may not have
# yet: the call, and the method and path it must send.
DESIGN_ROUTES: dict[str, tuple[Callable[[Kairos], Any], str, str]] = {
    "bulkJobs": (lambda c: c.bulk_jobs("orders", "cancel", {"labels": {"region": "eu"}}), "POST", "/v1/topics/orders/jobs/bulk"),
    "getOperation": (lambda c: c.get_operation("op-1"), "GET", "/v1/operations/op-1"),
    "backfillSchedule": (lambda c: c.backfill_schedule("reports", "daily", "2026-11-01T00:00:00Z",
                                                       datetime(2026, 11, 8, tzinfo=timezone.utc)),
                         "POST", "/v1/topics/reports/schedules/daily/backfill"),
    "mintToken": (lambda c: c.mint_token("acme", ttl="24h"), "POST", "/v1/tokens"),
    "getTopicSigningKeys": (lambda c: c.get_topic_signing_keys("orders"), "GET", "/v1/topics/orders/signing-keys"),
    "rotateTopicSigningKeys": (lambda c: c.rotate_topic_signing_keys("orders"), "POST", "/v1/topics/orders/signing-keys/rotate"),
    "replayJob": (lambda c: c.replay_job("orders", "order-1"), "POST", "/v1/topics/orders/jobs/order-1/retry"),
}


class _Answer:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self._body = status, body

    def read(self) -> bytes:
        return self._body

    def __enter__(self) -> "_Answer":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class Recorder:
    """An opener that records requests and answers with status and body."""

    def __init__(self, status: int = 200, body: bytes = b"{\"topics\": [], \"subscriptions\": []}", headers: dict[str, str] | None = None) -> None:
        self.status, self.body = status, body
        self.headers = headers or {"Content-Type": "application/json"}
        self.seen: list[urllib.request.Request] = []

    def __call__(self, req: Any, timeout: float) -> _Answer:
        self.seen.append(req)
        if self.status >= 400:
            h = email.message.Message()
            for k, v in self.headers.items():
                h[k] = v
            raise urllib.error.HTTPError(req.full_url, self.status, "Refused", h, io.BytesIO(self.body))
        return _Answer(self.status, b"" if self.status == 204 else self.body)


def template_matches(template: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path) is not None


class TestSpec(unittest.TestCase):
    def test_every_operation_has_a_method_that_sends_it(self) -> None:
        ops = operations()
        self.assertGreaterEqual(len(ops), 30, "too few operations read from openapi.yaml")
        missing = sorted(op for op in ops if op not in CALLS and op not in NOT_API_CALLS and op not in DESIGN_ROUTES)
        self.assertEqual(missing, [], "operations of openapi.yaml with no call in this test (add a client method and a call)")
        for op in CALLS:
            self.assertIn(op, ops, f"CALLS names {op}, which openapi.yaml does not have")
        for op, (method, path) in ops.items():
            if op in NOT_API_CALLS:
                continue
            with self.subTest(op=op):
                self.assertTrue(callable(getattr(Kairos, snake(op), None)), f"Kairos has no method {snake(op)} for {op}")
                rec = Recorder()
                (CALLS.get(op) or DESIGN_ROUTES[op][0])(Kairos("http://kairos.test/", "t0ken", opener=rec))
                self.assertEqual(len(rec.seen), 1)
                req = rec.seen[0]
                self.assertEqual(req.get_method(), method)
                got = urllib.parse.urlsplit(req.full_url).path
                self.assertTrue(template_matches(path, got), f"path {got}, want {path}")
                self.assertEqual(req.get_header("Authorization"), "Bearer t0ken")

    def test_routes_design_names_beyond_openapi(self) -> None:
        for op, (call, method, path) in DESIGN_ROUTES.items():
            with self.subTest(op=op):
                rec = Recorder(202, b'{"operation": "op-1"}')
                call(Kairos("http://kairos.test", opener=rec))
                self.assertEqual(rec.seen[0].get_method(), method)
                self.assertEqual(urllib.parse.urlsplit(rec.seen[0].full_url).path, path)
                self.assertTrue(callable(getattr(Kairos, snake(op), None)), f"Kairos has no method {snake(op)}")

    def test_bodies_and_queries_as_the_wire_spells_them(self) -> None:
        rec = Recorder()
        c = Kairos("http://kairos.test", opener=rec, tenant="acme", reveal_headers=True)
        CALLS["createJob"](c)
        CALLS["listJobs"](c)
        c.get_job("orders", "a/b")
        DESIGN_ROUTES["backfillSchedule"][0](c)
        self.assertEqual(json.loads(rec.seen[0].data), {"id": "order-1", "payload": {"order": 1},
                                                        "run_at": "2026-11-21T10:30:00.250Z"})
        self.assertEqual(rec.seen[0].get_header("Content-type"), "application/json")
        self.assertEqual(urllib.parse.urlsplit(rec.seen[1].full_url).query,
                         "state=dead&label=region%3Aeu&limit=10&cursor=abc&tenant=acme")
        parts = urllib.parse.urlsplit(rec.seen[2].full_url)
        self.assertEqual(parts.path, "/v1/topics/orders/jobs/a%2Fb")
        self.assertIn("reveal=headers", parts.query)
        self.assertEqual(json.loads(rec.seen[3].data), {"from": "2026-11-01T00:00:00Z", "to": "2026-11-08T00:00:00.000Z"})


class TestFanout(unittest.TestCase):
    def test_fanout_calls_send_the_bodies_paths_and_queries_openapi_names(self) -> None:
        rec = Recorder(200, b'{"subscriptions": [{"name": "billing"}]}')
        c = Kairos("http://kairos.test", opener=rec, reveal_headers=True)
        ops = operations()
        CALLS["putSubscription"](c)
        CALLS["publishMessage"](c)
        c.get_subscription("orders", "billing")
        c.get_message("orders", "msg/1")
        listed = c.list_subscriptions("orders")
        self.assertEqual(json.loads(rec.seen[0].data), {
            "url": "https://billing.example.com/hooks/orders", "event_types": ["order.created"],
            "filter": {"data.total": {"$gte": 100}}, "rate": {"limit": 10, "period": "1s"}, "signing": "subscription"})
        self.assertTrue(template_matches(ops["putSubscription"][1], urllib.parse.urlsplit(rec.seen[0].full_url).path))
        self.assertEqual(json.loads(rec.seen[1].data), {"event_type": "order.created", "payload": {"data": {"total": 120}},
                                                        "run_at": "2026-11-21T10:15:00.000Z"})
        self.assertEqual(urllib.parse.urlsplit(rec.seen[1].full_url).path, "/v1/topics/orders/messages")
        self.assertEqual(urllib.parse.urlsplit(rec.seen[2].full_url).query, "reveal=headers")
        self.assertEqual(urllib.parse.urlsplit(rec.seen[3].full_url).path, "/v1/topics/orders/messages/msg%2F1")
        self.assertEqual(listed, [{"name": "billing"}])
        for req in rec.seen[2:]:
            self.assertIsNone(req.data, "a read sends no body")

    def test_the_fanout_types_name_every_field_of_their_schemas(self) -> None:
        from kairos_client import types
        for name in ["SubscriptionRequest", "Subscription", "SubscriptionDeleted", "MessageRequest",
                     "DeliveryRef", "Published", "Message"]:
            with self.subTest(schema=name):
                self.assertEqual(sorted(getattr(types, name).__annotations__), schema_properties(name))


class TestErrors(unittest.TestCase):
    def test_a_refused_call_raises_with_the_problems_fields(self) -> None:
        problem = {"type": "urn:kairos:problem:validation", "title": "Invalid request", "status": 400,
                   "detail": "1 field is invalid", "errors": [{"field": "delay", "message": "not a duration"}]}
        rec = Recorder(400, json.dumps(problem).encode(), {"Content-Type": "application/problem+json"})
        with self.assertRaises(KairosError) as cm:
            Kairos("http://kairos.test", opener=rec).create_job("orders", {"delay": "soon"})
        e = cm.exception
        self.assertEqual((e.status, e.type, e.title, e.detail, e.errors),
                         (400, problem["type"], problem["title"], problem["detail"], problem["errors"]))

        busy = Recorder(503, b'{"type":"urn:kairos:problem:unavailable","title":"Service Unavailable","status":503}',
                        {"Content-Type": "application/problem+json", "Retry-After": "2"})
        with self.assertRaises(KairosError) as cm:
            Kairos("http://kairos.test", opener=busy).get_job("t", "x")
        self.assertEqual((cm.exception.status, cm.exception.retry_after), (503, 2.0))

        html = Recorder(502, b"<html>bad gateway</html>", {"Content-Type": "text/html"})
        with self.assertRaises(KairosError) as cm:
            Kairos("http://kairos.test", opener=html).get_job("t", "x")
        self.assertEqual((cm.exception.status, cm.exception.detail), (502, "<html>bad gateway</html>"))
        self.assertGreaterEqual(parse_retry_after(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 5))), 3)


SECRET = "whsec_" + base64.b64encode(bytes([7]) * 32).decode()
OTHER = "whsec_" + base64.b64encode(bytes([9]) * 32).decode()


class TestVerify(unittest.TestCase):
    body = b'{ "order": 42,  "note": "caf\\u00e9" }'
    url = "https://hooks.example.com/orders"

    def refused(self, headers: dict[str, str], body: bytes, reason: str, **kw: Any) -> None:
        secrets = kw.pop("secrets", [SECRET])
        with self.assertRaises(VerificationError) as cm:
            verify_callback(secrets, headers, body, **kw)
        self.assertEqual(cm.exception.reason, reason, str(cm.exception))

    def test_a_callback_signed_as_kairos_signs_verifies(self) -> None:
        h = sign_callback(SECRET, self.body, msg_id="msg_1", url=self.url)
        v = verify_callback([OTHER, SECRET], h, self.body, url=self.url)
        self.assertEqual(v.webhook_id, "msg_1")
        self.assertEqual(v.claims and v.claims["sub"], self.url)
        # header names in any case, as http.server's message gives them
        m = email.message.Message()
        for k, val in h.items():
            m[k.title()] = val
        verify_callback([SECRET], m, self.body)

    def test_a_tampered_or_stale_callback_is_refused(self) -> None:
        h = sign_callback(SECRET, self.body, msg_id="msg_1", url=self.url)
        self.refused(h, self.body.replace(b"42", b"43"), "invalid")
        self.refused(h, self.body, "invalid", secrets=[OTHER])
        self.refused(h, self.body, "invalid", url="https://evil.example.com/")
        self.refused({k: v for k, v in h.items() if k != "kairos-signature"}, self.body, "missing")
        self.refused({k: v for k, v in h.items() if k != "webhook-signature"}, self.body, "missing")
        stale = sign_callback(SECRET, self.body, msg_id="msg_1", url=self.url, timestamp=int(time.time()) - 600)
        self.refused(stale, self.body, "timestamp")
        swapped = sign_callback(SECRET, b"{}", msg_id="msg_1", url=self.url)
        self.refused({**h, "kairos-signature": swapped["kairos-signature"]}, self.body, "invalid")
        p = h["kairos-signature"].split(".")[1]
        none = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode() + "." + p + "."
        self.refused({**h, "kairos-signature": none}, self.body, "invalid")


if __name__ == "__main__":
    unittest.main()


class TestNotification(unittest.TestCase):
    BASE = {"type": "job.delivered", "job_id": "a", "topic": "t", "tenant": "x", "attempt": 1, "status": 200,
            "response_headers": {}}

    def test_a_notifications_answer_reads_back_as_bytes(self) -> None:
        from kairos_client import notification_body
        self.assertEqual(notification_body({**self.BASE, "response": "café"}), "café".encode())
        self.assertEqual(notification_body({**self.BASE, "response": "/wD+eA==", "response_encoding": "base64"}),
                         b"\xff\x00\xfex")
        with self.assertRaisesRegex(ValueError, "unknown response_encoding"):
            notification_body({**self.BASE, "response": "x", "response_encoding": "gzip"})
        with self.assertRaisesRegex(ValueError, "malformed base64"):
            notification_body({**self.BASE, "response": "%%%", "response_encoding": "base64"})
