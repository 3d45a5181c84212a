"""KairosError: a refused call, with the fields of its problem document."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

from .types import FieldError


class KairosError(Exception):
    """An answer of the server that refuses a call, with the fields of its
    problem document (RFC 9457): status, type (such as
    "urn:kairos:problem:not-found"), title, detail, and errors naming each
    broken field of a validation problem. retry_after is the wait in seconds
    its Retry-After header asked for (a 503 while Redis is away or fails
    over, a 429), or None.

    An answer that is not a problem document (a proxy's error page) becomes a
    KairosError too, with the status, its reason as title and the start of
    the body as detail.
    """

    def __init__(self, status: int, title: str, type: str = "about:blank", detail: str | None = None,
                 errors: list[FieldError] | None = None, retry_after: float | None = None) -> None:
        self.status = status
        self.title = title
        self.type = type
        self.detail = detail
        self.errors: list[FieldError] = errors or []
        self.retry_after = retry_after
        super().__init__(f"{status} {title}" + (f": {detail}" if detail else ""))

    @property
    def not_found(self) -> bool:
        """The server's 404: no such topic, job or schedule for this tenant."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """The server's 409: the object is not in a state that allows the call."""
        return self.status == 409

    @classmethod
    def from_answer(cls, status: int, reason: str, content_type: str, body: bytes,
                    retry_after: str | None) -> "KairosError":
        """Makes the error of a refused call from its answer."""
        wait = parse_retry_after(retry_after)
        mt = content_type.split(";")[0].strip().lower()
        if mt in ("application/problem+json", "application/json"):
            try:
                p: Any = json.loads(body)
            except ValueError:
                p = None
            if isinstance(p, dict) and isinstance(p.get("title"), str) and p["title"]:
                return cls(status, p["title"], p.get("type") or "about:blank", p.get("detail"),
                           p.get("errors"), wait)
        detail = body.decode("utf-8", "replace").strip()
        if len(detail) > 200:
            detail = detail[:200] + "…"
        return cls(status, reason or f"HTTP {status}", detail=detail or None, retry_after=wait)


def parse_retry_after(v: str | None, now: float | None = None) -> float | None:
    """Seconds of a Retry-After header: delta-seconds or an HTTP date."""
    if not v:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, at - (time.time() if now is None else now))
