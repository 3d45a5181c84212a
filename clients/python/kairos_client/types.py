"""The requests and answers of the kairos API (v1) as TypedDicts.

Field names are the wire's (snake_case), as openapi.yaml and DESIGN.md spell
them. Durations are Go duration strings plus days ("90s", "1.5h", "7d");
times in answers are RFC 3339 strings in UTC with milliseconds, and in
requests may also be timezone-aware datetimes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

Duration = str
Time = str
TimeInput = datetime | str
State = Literal["scheduled", "ready", "active", "retrying", "delivered", "dead", "expired", "cancelled"]
# job: a topic's own job; notification: a failure or success notification
# kairos made of another job's end.
JobKind = Literal["job", "notification"]


class Backoff(TypedDict, total=False):
    initial: Duration
    max: Duration


class Rate(TypedDict):
    limit: int
    period: Duration


class BreakerRequest(TypedDict, total=False):
    failures: int
    cooldown: Duration


class Breaker(TypedDict):
    """A topic's or a subscription's circuit breaker: failures and cooldown are
    absent when none is configured (it then reads "closed" and never opens)."""
    state: Literal["closed", "open", "half-open"]
    failures: NotRequired[int]
    cooldown: NotRequired[Duration]
    open_until: NotRequired[Time]


class TopicRequest(TypedDict, total=False):
    callback_url: str  # required
    method: str
    headers: dict[str, str]
    timeout: Duration
    max_attempts: int
    backoff: Backoff
    concurrency: int
    rate: Rate
    parallelism: int
    flow_key: str
    breaker: BreakerRequest
    failure_url: str
    success_url: str
    response_bytes: int
    signing: Literal["tenant", "topic"]


class Topic(TypedDict):
    name: str
    tenant: str
    method: str
    timeout: Duration
    max_attempts: int
    backoff: Backoff
    concurrency: int
    paused: bool
    created_at: Time
    updated_at: Time
    callback_url: NotRequired[str]
    headers: NotRequired[dict[str, str]]
    rate: NotRequired[Rate]
    parallelism: NotRequired[int]
    flow_key: NotRequired[str]
    breaker: NotRequired[Breaker]
    failure_url: NotRequired[str]
    success_url: NotRequired[str]
    response_bytes: NotRequired[int]
    signing: NotRequired[str]


class JobRequest(TypedDict, total=False):
    id: str
    run_at: TimeInput
    delay: Duration
    payload: Any
    callback_url: str
    method: str
    headers: dict[str, str]
    max_attempts: int
    timeout: Duration
    backoff: Backoff
    flow_key: str
    failure_url: str
    success_url: str
    labels: dict[str, str]
    priority: int
    expires_at: TimeInput
    ttl: Duration
    on_conflict: Literal["replace", "keep", "debounce"]
    max_delay: Duration
    dedup_key: str
    dedup_window: Duration


class RescheduleRequest(TypedDict, total=False):
    run_at: TimeInput
    delay: Duration


class Attempt(TypedDict):
    n: int
    at: Time
    duration_ms: float
    event: NotRequired[str]
    status: NotRequired[int]
    error: NotRequired[str]
    response: NotRequired[str]
    response_headers: NotRequired[dict[str, str]]


class Job(TypedDict):
    id: str
    topic: str
    tenant: str
    kind: NotRequired[JobKind]
    state: State
    run_at: Time
    created_at: Time
    attempts: int
    next_run_at: NotRequired[Time]
    done_at: NotRequired[Time]
    max_attempts: NotRequired[int]
    callback_url: NotRequired[str]
    method: NotRequired[str]
    headers: NotRequired[dict[str, str]]
    timeout: NotRequired[Duration]
    backoff: NotRequired[Backoff]
    flow_key: NotRequired[str]
    failure_url: NotRequired[str]
    success_url: NotRequired[str]
    labels: NotRequired[dict[str, str]]
    priority: NotRequired[int]
    expires_at: NotRequired[Time]
    dedup_key: NotRequired[str]
    payload: NotRequired[Any]
    last_attempt: NotRequired[Attempt]
    attempt_log: NotRequired[list[Attempt]]
    # In the answer to a create: created, replaced, kept, debounced or
    # duplicate. A duplicate whose first job's record is gone (cancelled, or
    # past the retention period) carries only id, topic, tenant and result.
    result: NotRequired[str]


class JobList(TypedDict):
    jobs: list[Job]
    next_cursor: NotRequired[str]


class FieldError(TypedDict):
    field: str
    message: str


class Problem(TypedDict):
    type: str
    title: str
    status: int
    detail: NotRequired[str]
    errors: NotRequired[list[FieldError]]


class BatchItem(TypedDict):
    index: int
    status: int
    job: NotRequired[Job]
    error: NotRequired[Problem]


class BatchResult(TypedDict):
    created: int
    replaced: int  # every 200: replaced, debounced, kept or duplicate
    kept: NotRequired[int]  # of replaced, kept as they were (on_conflict "keep")
    duplicate: NotRequired[int]  # of replaced, duplicates of their dedup_key
    failed: int
    results: list[BatchItem]


class BulkFilter(TypedDict, total=False):
    state: State
    labels: dict[str, str]
    run_at_from: TimeInput
    run_at_to: TimeInput


class Operation(TypedDict):
    """A bulk operation: matched is an estimate while running, done + failed once done."""
    id: str
    topic: str
    action: Literal["cancel", "replay"]
    filter: BulkFilter
    state: Literal["running", "done"]
    matched: int
    done: int
    failed: int
    created_at: str
    finished_at: NotRequired[str]


class BulkAccepted(Operation):
    """The answer to bulk_jobs: the operation, its id also as operation."""
    operation: str


class ScheduleRequest(TypedDict, total=False):
    cron: str
    every: Duration
    timezone: str
    start_at: TimeInput
    end_at: TimeInput
    catch_up: Literal["one", "none", "all"]
    paused: bool
    payload: Any
    callback_url: str
    method: str
    headers: dict[str, str]
    max_attempts: int
    timeout: Duration
    backoff: Backoff
    labels: dict[str, str]
    overlap: Literal["allow", "skip", "buffer_one"]
    jitter: Duration
    max_runs: int


class LastRun(TypedDict, total=False):
    job_id: str
    at: Time
    trigger: Literal["pattern", "manual", "backfill"]


class Schedule(TypedDict):
    id: str
    topic: str
    tenant: str
    timezone: str
    catch_up: str
    paused: bool
    next_runs: list[Time]
    created_at: Time
    updated_at: Time
    cron: NotRequired[str]
    every: NotRequired[Duration]
    start_at: NotRequired[Time]
    end_at: NotRequired[Time]
    state: NotRequired[str]
    pending_job: NotRequired[str]
    last_run: NotRequired[LastRun]
    payload: NotRequired[Any]
    callback_url: NotRequired[str]
    method: NotRequired[str]
    headers: NotRequired[dict[str, str]]
    max_attempts: NotRequired[int]
    timeout: NotRequired[Duration]
    backoff: NotRequired[Backoff]
    labels: NotRequired[dict[str, str]]
    overlap: NotRequired[str]
    jitter: NotRequired[Duration]
    max_runs: NotRequired[int]
    runs: NotRequired[int]
    skipped: NotRequired[int]
    result: NotRequired[str]


class ScheduleList(TypedDict):
    schedules: list[Schedule]
    next_cursor: NotRequired[str]


class BackfillResult(TypedDict):
    instants: int


class SigningKeys(TypedDict):
    current: str
    next: str


# A message's event type: 1-100 characters of text, no control characters.
EventType = str
# A subscription's filter, matched against each message's payload: each key a
# dotted path ("data.customer.tier"), each value a literal (equal; against an
# array: contains it) or a dict of operators $eq, $ne, $in, $nin, $gt, $gte,
# $lt, $lte, $exists, $prefix; top-level $and / $or take lists of filters.
Filter = dict[str, Any]
# "topic" (default): signed as the topic signs; "subscription": a secret of its own.
SubscriptionSigning = Literal["topic", "subscription"]


class SubscriptionRequest(TypedDict, total=False):
    url: str  # required
    event_types: list[EventType]  # absent: every message
    filter: Filter
    headers: dict[str, str]
    method: str
    timeout: Duration
    max_attempts: int
    backoff: Backoff
    rate: Rate
    parallelism: int
    breaker: BreakerRequest
    paused: bool  # pause or resume it with the put; absent: it stays as it is
    description: str
    signing: SubscriptionSigning


class SubscriptionCounts(TypedDict):
    """Its deliveries: pending (published, not yet ended), delivered, dead now."""
    pending: int
    delivered: int
    dead: int


class Subscription(TypedDict):
    name: str
    topic: str
    tenant: str
    url: str
    breaker: Breaker
    paused: bool
    signing: SubscriptionSigning
    counts: SubscriptionCounts
    created_at: Time
    updated_at: Time
    event_types: NotRequired[list[EventType]]
    filter: NotRequired[Filter]
    headers: NotRequired[dict[str, str]]
    method: NotRequired[str]
    timeout: NotRequired[Duration]
    max_attempts: NotRequired[int]
    backoff: NotRequired[Backoff]
    rate: NotRequired[Rate]
    parallelism: NotRequired[int]
    description: NotRequired[str]


class SubscriptionDeleted(TypedDict):
    """The answer to delete_subscription: the bulk operation cancelling its pending
    deliveries (absent when the server cancelled them before answering)."""
    subscription: str
    operation: NotRequired[str]


class MessageRequest(TypedDict, total=False):
    """run_at, delay, labels, dedup, expiry and priority read as a job create's."""
    id: str
    event_type: EventType
    payload: Any
    run_at: TimeInput
    delay: Duration
    labels: dict[str, str]
    dedup_key: str
    dedup_window: Duration
    ttl: Duration
    expires_at: TimeInput
    priority: int


class DeliveryRef(TypedDict):
    """A message's delivery to one subscription: a job of the topic, id "<message id>.<sub>"."""
    subscription: str
    job_id: str


class Published(TypedDict):
    """The answer to publish_message; result is "duplicate" for a dedup_key taken within its window."""
    id: str
    topic: str
    deliveries: list[DeliveryRef]
    run_at: NotRequired[Time]  # absent only from a duplicate whose first message is gone
    result: NotRequired[Literal["duplicate"]]


class Delivery(TypedDict):
    """A delivery and its job's state (no state once the job's record is gone)."""
    subscription: str
    job_id: str
    attempts: int
    state: NotRequired[State]
    next_run_at: NotRequired[Time]
    done_at: NotRequired[Time]
    last_attempt: NotRequired[Attempt]


class Message(TypedDict):
    id: str
    topic: str
    tenant: str
    run_at: Time
    created_at: Time
    deliveries: list[Delivery]
    event_type: NotRequired[EventType]
    payload: NotRequired[Any]
    labels: NotRequired[dict[str, str]]


class Quota(TypedDict):
    tenant: str
    max_pending: int
    rate: Rate | None
    pending: int
    custom: bool
    burst: NotRequired[int]


class QuotaRequest(TypedDict, total=False):
    max_pending: int
    rate: Rate
    burst: int


class RevocationRequest(TypedDict, total=False):
    issued_before: TimeInput
    jti: str


class Revocation(TypedDict):
    tenant: str
    issued_before: NotRequired[Time]
    jti: NotRequired[str]


class Token(TypedDict):
    token: str
    jti: str
    expires_at: Time


class TickSummary(TypedDict):
    delivered: int
    failed: int
    dead: int
    in_flight: int
    next_due: Time | None
    shards: int
    seconds: float


class Stats(TypedDict):
    at: Time
    topics: list[dict[str, Any]]
    due_next_hour: NotRequired[list[int]]


class Health(TypedDict):
    status: str


class NotificationLastAttempt(TypedDict):
    n: int
    at: Time
    duration_ms: float
    status: NotRequired[int]
    error: NotRequired[str]
    response: NotRequired[str]


class Notification(TypedDict):
    """The body kairos POSTs, signed like a callback, to a success_url after a
    delivery ("job.delivered") and to a failure_url when a job ends without one
    ("job.dead", "job.expired"). ``response`` is the receiver's answer to the
    last attempt, whole up to 64 KiB: text, or base64 when
    ``response_encoding`` is "base64" (notification_body decodes it)."""

    type: Literal["job.delivered", "job.dead", "job.expired"]
    job_id: str
    topic: str
    tenant: str
    attempt: int
    status: int
    response_headers: dict[str, str]
    response: str
    response_encoding: NotRequired[Literal["base64"]]
    state: NotRequired[Literal["dead", "expired"]]
    error: NotRequired[str]
    attempts: NotRequired[int]
    dead_at: NotRequired[Time]
    last_attempt: NotRequired[NotificationLastAttempt]
    expires_at: NotRequired[Time]
