"""kairos's Python client: the API (Kairos), its errors (KairosError) and
the receiver's check of a callback's signatures (verify_callback)."""

from .client import Kairos
from .errors import KairosError, parse_retry_after
from .notification import notification_body
from .verify import VerificationError, VerifiedCallback, secret_key, sign_callback, verify_callback

__all__ = ["Kairos", "KairosError", "parse_retry_after", "VerificationError", "VerifiedCallback",
           "secret_key", "sign_callback", "verify_callback", "notification_body"]
