"""What a success_url or failure_url receiver reads: the answer a
notification carries, as bytes."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any


def notification_body(n: Mapping[str, Any]) -> bytes:
    """Return the receiver's answer a notification carries: ``response`` as
    UTF-8, or decoded from base64 when ``response_encoding`` is "base64".
    Check the notification's signatures first (verify_callback). A malformed
    body or an unknown encoding raises ValueError."""
    enc = n.get("response_encoding") or ""
    response = n.get("response", "")
    if enc == "":
        return str(response).encode("utf-8")
    if enc == "base64":
        try:
            return base64.b64decode(str(response), validate=True)
        except binascii.Error as e:
            raise ValueError(f"malformed base64 response: {e}") from e
    raise ValueError(f'unknown response_encoding {enc!r}: kairos sends none (text) or "base64"')
