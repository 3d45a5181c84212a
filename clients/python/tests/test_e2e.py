"""A first job end to end against a real kairos: the Go test in e2e/
(TestClientSuites) starts kairos and redis-server and runs this suite with
KAIROS_URL and KAIROS_TOKEN (a tenant's token) set. Without them the suite
is skipped, unless KAIROS_E2E_REQUIRED=1 makes that a failure."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import unittest
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kairos_client import Kairos, KairosError, VerificationError, verify_callback

BASE_URL = os.environ.get("KAIROS_URL")
TOKEN = os.environ.get("KAIROS_TOKEN")
if not BASE_URL and os.environ.get("KAIROS_E2E_REQUIRED") == "1":
    raise RuntimeError("KAIROS_E2E_REQUIRED=1 but KAIROS_URL is not set")


class Receiver:
    """A loopback callback target that queues each request, body as bytes."""

    def __init__(self) -> None:
        self.got: queue.Queue[tuple[str, Any, bytes]] = queue.Queue()
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got.put((self.path, self.headers, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@unittest.skipUnless(BASE_URL, "set KAIROS_URL and KAIROS_TOKEN to run against a kairos")
class TestAgainstKairos(unittest.TestCase):
    def setUp(self) -> None:
        assert BASE_URL is not None
        self.kairos = Kairos(BASE_URL, TOKEN)

    def test_a_first_job_end_to_end_with_its_signatures_checked(self) -> None:
        k = self.kairos
        self.assertEqual(k.healthz()["status"], "ok")
        rcv = Receiver()
        self.addCleanup(rcv.close)
        url = rcv.url + "/hooks/orders"
        self.assertEqual(k.put_topic("py-orders", {"callback_url": url, "max_attempts": 3})["name"], "py-orders")

        payload = {"order": 42, "note": "café ☕"}
        job = k.create_job("py-orders", {"id": "order-42", "delay": "100ms", "payload": payload})
        self.assertEqual(job["id"], "order-42")

        path, headers, body = rcv.got.get(timeout=15)
        self.assertEqual(path, "/hooks/orders")
        self.assertEqual(headers["Kairos-Job-Id"], "order-42")
        self.assertEqual(json.loads(body), payload)
        keys = k.get_signing_keys()
        v = verify_callback([keys["current"], keys["next"]], headers, body, url=url)
        self.assertEqual(v.claims and v.claims["sub"], url)
        tampered = bytearray(body)
        tampered[-2] ^= 1
        with self.assertRaises(VerificationError):
            verify_callback([keys["current"], keys["next"]], headers, bytes(tampered))

        for _ in range(100):
            got = k.get_job("py-orders", "order-42")
            if got["state"] == "delivered":
                break
            time.sleep(0.05)
        self.assertEqual(got["state"], "delivered")
        self.assertEqual(got["attempts"], 1)

    def test_jobs_and_schedules_against_the_real_api(self) -> None:
        k = self.kairos
        k.put_topic("py-later", {"callback_url": "http://127.0.0.1:9/never"})
        batch = k.create_jobs("py-later", [{"id": "a", "delay": "1h"}, {"id": "b", "delay": "1h"}])
        self.assertEqual(batch["created"], 2)
        moved = k.reschedule_job("py-later", "a", {"run_at": datetime.now(timezone.utc) + timedelta(hours=2)})
        self.assertEqual(moved["id"], "a")
        k.cancel_job("py-later", "b")
        self.assertEqual([j["id"] for j in k.list_jobs("py-later", state="scheduled")["jobs"]], ["a"])

        self.assertEqual(k.get_job("py-later", "b")["state"], "cancelled")
        self.assertEqual([j["id"] for j in k.list_jobs("py-later", state="cancelled")["jobs"]], ["b"])

        with self.assertRaises(KairosError) as cm:
            k.get_job("py-later", "nope")
        self.assertTrue(cm.exception.not_found)
        self.assertIn("not-found", cm.exception.type)
        with self.assertRaises(KairosError) as cm:
            k.create_job("py-later", {"delay": "soon"})
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual(cm.exception.errors[0]["field"], "delay")

        s = k.put_schedule("py-later", "daily", {"cron": "0 9 * * *", "timezone": "Europe/Paris"})
        self.assertEqual(len(s["next_runs"]), 5)
        self.assertTrue(k.pause_schedule("py-later", "daily")["paused"])
        self.assertFalse(k.resume_schedule("py-later", "daily")["paused"])
        self.assertTrue(k.trigger_schedule("py-later", "daily")["id"].startswith("daily@"))
        self.assertEqual(len(k.list_schedules("py-later")["schedules"]), 1)
        k.delete_schedule("py-later", "daily")
        self.assertIsInstance(k.list_dead()["jobs"], list)
        self.assertIn("py-later", [t["name"] for t in k.list_topics()])

    def test_labels_and_a_bulk_cancel_against_the_real_api(self) -> None:
        k = self.kairos
        k.put_topic("py-bulk", {"callback_url": "http://127.0.0.1:9/never"})
        k.create_jobs("py-bulk", [{"id": "l1", "delay": "1h", "labels": {"env": "qa"}},
                                  {"id": "l2", "delay": "1h", "labels": {"env": "qa", "team": "a"}},
                                  {"id": "l3", "delay": "1h"}])
        listed = k.list_jobs("py-bulk", labels={"env": "qa", "team": "a"})["jobs"]
        self.assertEqual([j["id"] for j in listed], ["l2"])
        self.assertEqual(listed[0]["labels"], {"env": "qa", "team": "a"})
        op = k.get_operation(k.bulk_jobs("py-bulk", "cancel", {"labels": {"env": "qa"}})["operation"])
        for _ in range(200):
            if op["state"] == "done":
                break
            time.sleep(0.05)
            op = k.get_operation(op["id"])
        self.assertEqual((op["state"], op["done"], op["failed"]), ("done", 2, 0))
        self.assertEqual([j["id"] for j in k.list_jobs("py-bulk", state="scheduled")["jobs"]], ["l3"])
        self.assertEqual(sorted(j["id"] for j in k.list_jobs("py-bulk", state="cancelled")["jobs"]), ["l1", "l2"])

    def test_fanout_a_subscription_with_a_filter_gets_a_message_signed_with_its_own_secret(self) -> None:
        k = self.kairos
        rcv = Receiver()
        self.addCleanup(rcv.close)
        url = rcv.url + "/hooks/billing"
        k.put_topic("py-fanout", {"callback_url": "http://127.0.0.1:9/topic-never"})
        sub = k.put_subscription("py-fanout", "billing", {"url": url, "event_types": ["order.created"],
                                                          "filter": {"data.total": {"$gte": 100}}, "signing": "subscription"})
        self.assertEqual((sub["name"], sub["signing"], sub["paused"], sub["breaker"]["state"]),
                         ("billing", "subscription", False, "closed"))
        # another subscription the message does not match, by its filter
        k.put_subscription("py-fanout", "small", {"url": rcv.url + "/hooks/small", "filter": {"data.total": {"$lt": 100}}})
        with self.assertRaises(KairosError) as cm:
            k.put_subscription("py-fanout", "bad", {"url": url, "filter": {"data.total": {"$gt": {}}}})
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual(cm.exception.errors[0]["field"], "filter.data.total.$gt")

        payload = {"data": {"order_id": 8412, "total": 120}}
        pub = k.publish_message("py-fanout", {"id": "order-8412", "event_type": "order.created", "payload": payload})
        self.assertEqual(pub["deliveries"], [{"subscription": "billing", "job_id": "order-8412.billing"}])

        path, headers, body = rcv.got.get(timeout=15)
        self.assertEqual(path, "/hooks/billing")
        self.assertEqual(headers["Kairos-Subscription"], "billing")
        self.assertEqual(headers["Kairos-Message-Id"], "order-8412")
        self.assertEqual(json.loads(body), payload)
        keys = k.get_subscription_signing_keys("py-fanout", "billing")
        v = verify_callback([keys["current"], keys["next"]], headers, body, url=url)
        self.assertEqual(v.claims and v.claims["sub"], url)
        # the tenant's secrets do not verify it: it is signed with the subscription's own
        tenant_keys = k.get_signing_keys()
        with self.assertRaises(VerificationError):
            verify_callback([tenant_keys["current"], tenant_keys["next"]], headers, body)

        for _ in range(100):
            msg = k.get_message("py-fanout", "order-8412")
            if msg["deliveries"] and msg["deliveries"][0].get("state") == "delivered":
                break
            time.sleep(0.05)
        self.assertEqual((msg["event_type"], msg["payload"]), ("order.created", payload))
        self.assertEqual([(d["subscription"], d["job_id"], d.get("state"), d["attempts"]) for d in msg["deliveries"]],
                         [("billing", "order-8412.billing", "delivered", 1)])
        self.assertEqual([s["name"] for s in k.list_subscriptions("py-fanout")], ["billing", "small"])
        for _ in range(100):
            counts = k.get_subscription("py-fanout", "billing")["counts"]
            if counts["delivered"] == 1:
                break
            time.sleep(0.05)
        self.assertEqual(counts, {"pending": 0, "delivered": 1, "dead": 0})

        # pause, resume, rotate and delete
        self.assertTrue(k.pause_subscription("py-fanout", "billing")["paused"])
        self.assertFalse(k.resume_subscription("py-fanout", "billing")["paused"])
        self.assertEqual(k.rotate_subscription_signing_keys("py-fanout", "billing")["current"], keys["next"])
        with self.assertRaises(KairosError) as cm:
            k.get_subscription_signing_keys("py-fanout", "small")
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(k.delete_subscription("py-fanout", "small")["subscription"], "small")
        with self.assertRaises(KairosError) as cm:
            k.get_subscription("py-fanout", "small")
        self.assertTrue(cm.exception.not_found)
        self.assertEqual(k.publish_message("py-fanout", {"event_type": "order.refunded", "payload": {}})["deliveries"], [])


if __name__ == "__main__":
    unittest.main()
