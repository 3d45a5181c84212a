"""Kairos: a client of the kairos API (v1) on the standard library."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, cast

from .errors import KairosError
from .types import (
    BackfillResult, BatchResult, BulkAccepted, BulkFilter, Duration, Health, Job, JobKind, JobList, JobRequest,
    Message, MessageRequest, Operation, Published, Quota, QuotaRequest, RescheduleRequest, Revocation,
    RevocationRequest, Schedule, ScheduleList, ScheduleRequest, SigningKeys, State, Stats, Subscription,
    SubscriptionDeleted, SubscriptionRequest, TickSummary, TimeInput, Token, Topic, TopicRequest,
)

# Opener is what sends a request: urllib.request.urlopen's signature.
Opener = Callable[..., Any]


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _json_default(v: Any) -> Any:
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)  # a naive datetime is taken as UTC
        return v.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


def _list_query(state: State | None = None, labels: Mapping[str, str] | None = None,
                limit: int | None = None, cursor: str | None = None,
                kind: JobKind | None = None) -> list[tuple[str, str]]:
    q: list[tuple[str, str]] = []
    if state:
        q.append(("state", state))
    if kind:
        q.append(("kind", kind))
    for k, v in (labels or {}).items():
        q.append(("label", f"{k}:{v}"))
    if limit:
        q.append(("limit", str(limit)))
    if cursor:
        q.append(("cursor", cursor))
    return q


class Kairos:
    """A client of the kairos API (v1). Each method is one call and returns
    the answer's body (None for a 204); a refused call raises KairosError
    with the problem's fields. The client does not retry: a 503 or 429 says
    when to with KairosError.retry_after; retry a create with the same
    dedup_key, which holds for its window even after the job was delivered.

    tenant makes an admin token act on one tenant (the tenant query
    parameter); reveal_headers makes get_topic, get_job and get_subscription
    show the values of secret-looking headers. opener replaces urllib.request.urlopen (for
    a proxy, client certificates, or tests).
    """

    def __init__(self, base_url: str, token: str | None = None, *, tenant: str | None = None,
                 reveal_headers: bool = False, timeout: float = 30.0,
                 headers: Mapping[str, str] | None = None, opener: Opener | None = None) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError(f"kairos: base_url {base_url!r}: want http:// or https:// and a host")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.tenant = tenant
        self.reveal_headers = reveal_headers
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._open: Opener = opener or urllib.request.urlopen

    def _call(self, method: str, path: str, query: list[tuple[str, str]] | None = None,
              body: Any = None) -> Any:
        q = list(query or [])
        if path.startswith("/v1/") and self.tenant:
            q.append(("tenant", self.tenant))
        url = self.base_url + path + ("?" + urllib.parse.urlencode(q) if q else "")
        headers = {"Accept": "application/json, application/problem+json", **self.headers}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body, default=_json_default, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._open(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read()
            raise KairosError.from_answer(err.code, str(err.reason or ""), err.headers.get("Content-Type", ""),
                                          raw, err.headers.get("Retry-After")) from None
        if status == 204 or not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise KairosError(status, "answer is not JSON", detail=raw[:200].decode("utf-8", "replace")) from None

    def _reveal(self) -> list[tuple[str, str]]:
        return [("reveal", "headers")] if self.reveal_headers else []

    # Health

    def healthz(self) -> Health:
        """GET /healthz: the process is up."""
        return cast(Health, self._call("GET", "/healthz"))

    def readyz(self) -> Health:
        """GET /readyz: the process can serve (Redis answers and is a master); raises a 503 otherwise."""
        return cast(Health, self._call("GET", "/readyz"))

    # Topics

    def list_topics(self) -> list[Topic]:
        """GET /v1/topics."""
        return cast(list[Topic], self._call("GET", "/v1/topics")["topics"])

    def put_topic(self, topic: str, req: TopicRequest) -> Topic:
        """PUT /v1/topics/{topic}: creates or replaces a topic."""
        return cast(Topic, self._call("PUT", f"/v1/topics/{_seg(topic)}", body=req))

    def get_topic(self, topic: str) -> Topic:
        """GET /v1/topics/{topic}."""
        return cast(Topic, self._call("GET", f"/v1/topics/{_seg(topic)}", self._reveal()))

    def delete_topic(self, topic: str) -> None:
        """DELETE /v1/topics/{topic}."""
        self._call("DELETE", f"/v1/topics/{_seg(topic)}")

    def pause_topic(self, topic: str) -> Topic:
        """POST /v1/topics/{topic}/pause: stops deliveries; jobs keep coming due."""
        return cast(Topic, self._call("POST", f"/v1/topics/{_seg(topic)}/pause"))

    def resume_topic(self, topic: str) -> Topic:
        """POST /v1/topics/{topic}/resume."""
        return cast(Topic, self._call("POST", f"/v1/topics/{_seg(topic)}/resume"))

    def get_topic_signing_keys(self, topic: str) -> SigningKeys:
        """GET /v1/topics/{topic}/signing-keys: the secrets of a topic with "signing": "topic"."""
        return cast(SigningKeys, self._call("GET", f"/v1/topics/{_seg(topic)}/signing-keys"))

    def rotate_topic_signing_keys(self, topic: str) -> SigningKeys:
        """POST /v1/topics/{topic}/signing-keys/rotate."""
        return cast(SigningKeys, self._call("POST", f"/v1/topics/{_seg(topic)}/signing-keys/rotate"))

    # Jobs

    def create_job(self, topic: str, req: JobRequest) -> Job:
        """POST /v1/topics/{topic}/jobs: the job, with result set for a replace, keep, debounce or duplicate."""
        return cast(Job, self._call("POST", f"/v1/topics/{_seg(topic)}/jobs", body=req))

    def create_jobs(self, topic: str, jobs: list[JobRequest]) -> BatchResult:
        """POST /v1/topics/{topic}/jobs/batch: up to 1000 jobs, a result per job. A batch where
        some failed returns (207); one where all failed raises."""
        return cast(BatchResult, self._call("POST", f"/v1/topics/{_seg(topic)}/jobs/batch", body={"jobs": jobs}))

    def list_jobs(self, topic: str, *, state: State | None = None, labels: Mapping[str, str] | None = None,
                  limit: int | None = None, cursor: str | None = None, kind: JobKind | None = None) -> JobList:
        """GET /v1/topics/{topic}/jobs: a page of jobs, newest first; every label must match;
        kind keeps jobs or failure and success notifications only."""
        return cast(JobList, self._call("GET", f"/v1/topics/{_seg(topic)}/jobs", _list_query(state, labels, limit, cursor, kind)))

    def get_job(self, topic: str, id: str) -> Job:
        """GET /v1/topics/{topic}/jobs/{id}: state, attempts, attempt_log, next run."""
        return cast(Job, self._call("GET", f"/v1/topics/{_seg(topic)}/jobs/{_seg(id)}", self._reveal()))

    def reschedule_job(self, topic: str, id: str, req: RescheduleRequest) -> Job:
        """PATCH /v1/topics/{topic}/jobs/{id}: moves a pending job to run_at or now + delay."""
        return cast(Job, self._call("PATCH", f"/v1/topics/{_seg(topic)}/jobs/{_seg(id)}", body=req))

    def cancel_job(self, topic: str, id: str) -> None:
        """DELETE /v1/topics/{topic}/jobs/{id}: cancels a job that has not been delivered (it stays readable as cancelled for the retention period)."""
        self._call("DELETE", f"/v1/topics/{_seg(topic)}/jobs/{_seg(id)}")

    def retry_job(self, topic: str, id: str) -> Job:
        """POST /v1/topics/{topic}/jobs/{id}/retry: replays a dead or expired job now."""
        return cast(Job, self._call("POST", f"/v1/topics/{_seg(topic)}/jobs/{_seg(id)}/retry"))

    replay_job = retry_job

    def bulk_jobs(self, topic: str, action: str, filter: BulkFilter) -> BulkAccepted:
        """POST /v1/topics/{topic}/jobs/bulk: cancels or replays ("cancel", "replay") every job
        the filter matches, in the background; poll get_operation with the answer's operation."""
        return cast(BulkAccepted, self._call("POST", f"/v1/topics/{_seg(topic)}/jobs/bulk",
                                             body={"action": action, "filter": filter}))

    def get_operation(self, id: str) -> Operation:
        """GET /v1/operations/{id}: how far a bulk action got."""
        return cast(Operation, self._call("GET", f"/v1/operations/{_seg(id)}"))

    def list_dead(self, *, limit: int | None = None, cursor: str | None = None, kind: JobKind | None = None) -> JobList:
        """GET /v1/dead: the dead jobs of every topic, most recently dead first; kind keeps
        jobs or failure and success notifications only."""
        return cast(JobList, self._call("GET", "/v1/dead", _list_query(limit=limit, cursor=cursor, kind=kind)))

    # Schedules

    def put_schedule(self, topic: str, id: str, req: ScheduleRequest) -> Schedule:
        """PUT /v1/topics/{topic}/schedules/{id}: creates or replaces a schedule."""
        return cast(Schedule, self._call("PUT", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}", body=req))

    def get_schedule(self, topic: str, id: str) -> Schedule:
        """GET /v1/topics/{topic}/schedules/{id}."""
        return cast(Schedule, self._call("GET", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}"))

    def list_schedules(self, topic: str, *, limit: int | None = None, cursor: str | None = None) -> ScheduleList:
        """GET /v1/topics/{topic}/schedules."""
        return cast(ScheduleList, self._call("GET", f"/v1/topics/{_seg(topic)}/schedules",
                                             _list_query(limit=limit, cursor=cursor)))

    def delete_schedule(self, topic: str, id: str) -> None:
        """DELETE /v1/topics/{topic}/schedules/{id}."""
        self._call("DELETE", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}")

    def pause_schedule(self, topic: str, id: str) -> Schedule:
        """POST /v1/topics/{topic}/schedules/{id}/pause."""
        return cast(Schedule, self._call("POST", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}/pause"))

    def resume_schedule(self, topic: str, id: str) -> Schedule:
        """POST /v1/topics/{topic}/schedules/{id}/resume."""
        return cast(Schedule, self._call("POST", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}/resume"))

    def trigger_schedule(self, topic: str, id: str) -> Job:
        """POST /v1/topics/{topic}/schedules/{id}/trigger: fires one occurrence now."""
        return cast(Job, self._call("POST", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}/trigger"))

    def backfill_schedule(self, topic: str, id: str, start: TimeInput, end: TimeInput) -> BackfillResult:
        """POST /v1/topics/{topic}/schedules/{id}/backfill: fires each instant of the pattern in
        [start, end) once (the body's from and to)."""
        return cast(BackfillResult, self._call("POST", f"/v1/topics/{_seg(topic)}/schedules/{_seg(id)}/backfill",
                                               body={"from": start, "to": end}))

    # Fan-out: subscriptions and messages

    def _sub(self, topic: str, sub: str, *more: str) -> str:
        return "/".join([f"/v1/topics/{_seg(topic)}/subscriptions/{_seg(sub)}", *more])

    def list_subscriptions(self, topic: str) -> list[Subscription]:
        """GET /v1/topics/{topic}/subscriptions: the topic's subscriptions by name, with counts and breaker state."""
        return cast(list[Subscription], self._call("GET", f"/v1/topics/{_seg(topic)}/subscriptions")["subscriptions"])

    def put_subscription(self, topic: str, sub: str, req: SubscriptionRequest) -> Subscription:
        """PUT /v1/topics/{topic}/subscriptions/{sub}: registers or replaces a subscription (and
        registers the topic when it has none). A filter that does not parse raises a 400 naming
        its path."""
        return cast(Subscription, self._call("PUT", self._sub(topic, sub), body=req))

    def get_subscription(self, topic: str, sub: str) -> Subscription:
        """GET /v1/topics/{topic}/subscriptions/{sub}: with its counts and breaker state."""
        return cast(Subscription, self._call("GET", self._sub(topic, sub), self._reveal()))

    def delete_subscription(self, topic: str, sub: str) -> SubscriptionDeleted:
        """DELETE /v1/topics/{topic}/subscriptions/{sub}: it goes at once; a bulk operation
        (get_operation) cancels its pending deliveries."""
        return cast(SubscriptionDeleted, self._call("DELETE", self._sub(topic, sub)))

    def pause_subscription(self, topic: str, sub: str) -> Subscription:
        """POST /v1/topics/{topic}/subscriptions/{sub}/pause: its deliveries wait, parked; the
        topic's other subscriptions go on."""
        return cast(Subscription, self._call("POST", self._sub(topic, sub, "pause")))

    def resume_subscription(self, topic: str, sub: str) -> Subscription:
        """POST /v1/topics/{topic}/subscriptions/{sub}/resume: its parked deliveries are filed
        again at their run_at."""
        return cast(Subscription, self._call("POST", self._sub(topic, sub, "resume")))

    def get_subscription_signing_keys(self, topic: str, sub: str) -> SigningKeys:
        """GET /v1/topics/{topic}/subscriptions/{sub}/signing-keys: the own secrets of one with
        "signing": "subscription" (409 otherwise)."""
        return cast(SigningKeys, self._call("GET", self._sub(topic, sub, "signing-keys")))

    def rotate_subscription_signing_keys(self, topic: str, sub: str) -> SigningKeys:
        """POST /v1/topics/{topic}/subscriptions/{sub}/signing-keys/rotate: next becomes current,
        a new next is drawn."""
        return cast(SigningKeys, self._call("POST", self._sub(topic, sub, "signing-keys", "rotate")))

    def publish_message(self, topic: str, req: MessageRequest) -> Published:
        """POST /v1/topics/{topic}/messages: each subscription the message matches now gets a
        delivery, a job of the topic with id "<message id>.<sub>"."""
        return cast(Published, self._call("POST", f"/v1/topics/{_seg(topic)}/messages", body=req))

    def get_message(self, topic: str, id: str) -> Message:
        """GET /v1/topics/{topic}/messages/{id}: the message and each delivery's state."""
        return cast(Message, self._call("GET", f"/v1/topics/{_seg(topic)}/messages/{_seg(id)}"))

    # Signing keys, stats, tick

    def get_signing_keys(self) -> SigningKeys:
        """GET /v1/signing-keys: the tenant's callback signing secrets."""
        return cast(SigningKeys, self._call("GET", "/v1/signing-keys"))

    def rotate_signing_keys(self) -> SigningKeys:
        """POST /v1/signing-keys/rotate: next becomes current, a new next is made."""
        return cast(SigningKeys, self._call("POST", "/v1/signing-keys/rotate"))

    def get_stats(self) -> Stats:
        """GET /v1/stats."""
        return cast(Stats, self._call("GET", "/v1/stats"))

    def tick(self, for_: Duration | None = None) -> TickSummary:
        """POST /v1/tick (admin): runs due work for up to for_."""
        return cast(TickSummary, self._call("POST", "/v1/tick", body={"for": for_} if for_ else {}))

    # Tenants (admin)

    def mint_token(self, tenant: str, *, admin: bool = False, ttl: Duration | None = None) -> Token:
        """POST /v1/tokens (admin): mints a token for a tenant."""
        body: dict[str, Any] = {"tenant": tenant}
        if admin:
            body["admin"] = True
        if ttl:
            body["ttl"] = ttl
        return cast(Token, self._call("POST", "/v1/tokens", body=body))

    def get_quota(self, tenant: str) -> Quota:
        """GET /v1/tenants/{tenant}/quota."""
        return cast(Quota, self._call("GET", f"/v1/tenants/{_seg(tenant)}/quota"))

    def put_quota(self, tenant: str, req: QuotaRequest) -> Quota:
        """PUT /v1/tenants/{tenant}/quota (admin)."""
        return cast(Quota, self._call("PUT", f"/v1/tenants/{_seg(tenant)}/quota", body=req))

    def delete_quota(self, tenant: str) -> None:
        """DELETE /v1/tenants/{tenant}/quota (admin): back to the defaults."""
        self._call("DELETE", f"/v1/tenants/{_seg(tenant)}/quota")

    def revoke_tokens(self, tenant: str, req: RevocationRequest) -> Revocation:
        """POST /v1/tenants/{tenant}/revocations (admin): revokes one token (jti) or all issued before a time."""
        return cast(Revocation, self._call("POST", f"/v1/tenants/{_seg(tenant)}/revocations", body=req))
