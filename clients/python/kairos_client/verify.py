"""The receiver side: checking that a callback came from kairos.

A callback carries two signatures, both keyed by the tenant's (or topic's)
whsec_ secret:

- Standard Webhooks: webhook-id, webhook-timestamp (unix seconds) and
  webhook-signature ("v1,<base64 HMAC-SHA256 of id.timestamp.body>", several
  separated by spaces);
- Kairos-Signature: a JWT, HS256 only, with iss "kairos", sub the URL kairos
  called, iat/nbf/exp, jti unique per attempt, and body the unpadded
  base64url SHA-256 of the body.

Verify over the body exactly as received: never json.loads and json.dumps it
first.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

TOLERANCE = 300  # seconds webhook-timestamp may be from now

# base64url of {"alg":"HS256","typ":"JWT"}, the header kairos writes.
_JWT_HEADER = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"


class VerificationError(Exception):
    """Why a callback did not verify; reason is "missing", "invalid" or "timestamp"."""

    def __init__(self, reason: Literal["missing", "invalid", "timestamp"], message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class VerifiedCallback:
    """What a verified callback says about itself. webhook_id stays the same
    across the retries of one job: deduplicate on it."""

    webhook_id: str
    timestamp: int
    claims: dict[str, Any] | None


def secret_key(secret: str) -> bytes:
    """Returns the HMAC key of a "whsec_..." secret (the prefix is optional)."""
    if secret.startswith("whsec_"):
        secret = secret[len("whsec_"):]
    try:
        key = base64.b64decode(secret, validate=True)
    except binascii.Error as err:
        raise ValueError("malformed signing secret: want whsec_ and standard base64") from err
    if not key:
        raise ValueError("empty signing secret")
    return key


def _header(headers: Mapping[str, str] | Any, name: str) -> str | None:
    get = getattr(headers, "get", None)
    if get is not None:
        v = get(name)
        if v is None:  # a plain dict is case-sensitive
            for k in headers:
                if k.lower() == name:
                    v = headers[k]
                    break
        if isinstance(v, (list, tuple)):
            v = ", ".join(v)
        return v
    return None


def _b64url_decode(s: str) -> bytes:
    if not s or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in s):
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def _b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def verify_callback(secrets: Iterable[str], headers: Mapping[str, str] | Any, body: bytes, *,
                    url: str | None = None, tolerance: int = TOLERANCE, now: float | None = None,
                    require_kairos_signature: bool = True) -> VerifiedCallback:
    """Checks both signatures of a callback over body (bytes, exactly as
    received) against any of secrets (pass current and next during a
    rotation). headers is any mapping with get(): http.server's, a WSGI or
    ASGI framework's, or a dict. With url, the sub claim of Kairos-Signature
    must equal it. Returns what the callback says about itself; raises
    VerificationError naming the header that failed."""
    keys = [secret_key(s) for s in secrets]
    if not keys:
        raise ValueError("verify_callback: no secrets given")
    if isinstance(body, str):
        body = body.encode()
    msg_id = _header(headers, "webhook-id")
    ts_text = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    token = _header(headers, "kairos-signature")
    for name, v in (("webhook-id", msg_id), ("webhook-timestamp", ts_text), ("webhook-signature", sigs)):
        if not v:
            raise VerificationError("missing", f"{name} header: missing signature")
    if require_kairos_signature and not token:
        raise VerificationError("missing", "kairos-signature header: missing signature")
    assert msg_id is not None and ts_text is not None and sigs is not None
    if not ts_text.isdigit():
        raise VerificationError("invalid", "webhook-timestamp header: not unix seconds")
    ts = int(ts_text)
    now_s = int(time.time() if now is None else now)
    if abs(now_s - ts) > tolerance:
        raise VerificationError("timestamp", f"webhook-timestamp header: {ts - now_s}s from now, tolerance {tolerance}s")
    signed = f"{msg_id}.{ts_text}.".encode() + body
    expected = [base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()) for k in keys]
    ok = False
    for entry in sigs.split():
        version, _, sig = entry.partition(",")
        if version != "v1":
            continue
        for want in expected:
            if hmac.compare_digest(sig.encode(), want):
                ok = True
    if not ok:
        raise VerificationError("invalid", "webhook-signature header: no v1 signature matches")
    claims = _verify_token(keys, token, body, tolerance, now_s, url) if token else None
    return VerifiedCallback(msg_id, ts, claims)


def _verify_token(keys: list[bytes], token: str, body: bytes, tolerance: int, now: int, url: str | None) -> dict[str, Any]:
    def fail(msg: str, reason: Literal["invalid", "timestamp"] = "invalid") -> VerificationError:
        return VerificationError(reason, f"kairos-signature header: {msg}")

    parts = token.split(".")
    if len(parts) != 3:
        raise fail("not a compact JWT")
    h, p, s = parts
    try:
        header = json.loads(_b64url_decode(h))
        claims = json.loads(_b64url_decode(p))
        mac = _b64url_decode(s)
    except ValueError:
        raise fail("malformed header, claims or signature") from None
    if not isinstance(header, dict) or header.get("alg") != "HS256":
        raise fail(f"algorithm {header.get('alg') if isinstance(header, dict) else None!r}, want HS256")
    signed = f"{h}.{p}".encode()
    if not any(hmac.compare_digest(hmac.new(k, signed, hashlib.sha256).digest(), mac) for k in keys):
        raise fail("signature does not match")
    if not isinstance(claims, dict):
        raise fail("claims are not an object")
    if claims.get("iss") != "kairos":
        raise fail(f"issuer {claims.get('iss')!r}, want kairos")
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if not isinstance(exp, (int, float)):
        raise fail("no exp claim")
    if now > exp + tolerance:
        raise fail("token expired", "timestamp")
    if isinstance(nbf, (int, float)) and now < nbf - tolerance:
        raise fail("token not valid yet", "timestamp")
    if isinstance(iat, (int, float)) and now < iat - tolerance:
        raise fail("token used before issued", "timestamp")
    if url is not None and claims.get("sub") != url:
        raise fail(f"subject {claims.get('sub')!r}, want {url}")
    if not hmac.compare_digest(str(claims.get("body", "")).encode(), _b64url(hashlib.sha256(body).digest()).encode()):
        raise fail("body claim does not match the body")
    return claims


def sign_callback(secret: str, body: bytes, *, msg_id: str, url: str, delivery_id: str | None = None,
                  timestamp: int | None = None) -> dict[str, str]:
    """Signs body the way kairos does, for tests of a receiver: returns the
    four signature headers of a callback to url."""
    key = secret_key(secret)
    ts = int(time.time()) if timestamp is None else timestamp
    wh = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
    claims = {"iss": "kairos", "sub": url, "iat": ts, "nbf": ts, "exp": ts + 300,
              "jti": delivery_id or f"{msg_id}.1", "body": _b64url(hashlib.sha256(body).digest())}
    unsigned = _JWT_HEADER + "." + _b64url(json.dumps(claims, separators=(",", ":")).encode())
    sig = _b64url(hmac.new(key, unsigned.encode(), hashlib.sha256).digest())
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": "v1," + wh,
            "kairos-signature": unsigned + "." + sig}
