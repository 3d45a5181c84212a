"""A minimal kairos callback receiver on Python's standard library.

It checks each callback's Standard Webhooks signature over the raw body and
answers 204, or 401 when it does not hold:

    KAIROS_SECRET_CURRENT=whsec_... python3 receiver.py --port 9000

The secrets come from the environment only (KAIROS_SECRET_CURRENT and, during a
rotation, KAIROS_SECRET_NEXT: GET /v1/signing-keys shows both), so they never
show in the process list. The port comes from --port or PORT (default 9000; 0
picks a free one). It listens on 127.0.0.1 only and prints one line per
accepted callback.

Where PyPI is reachable, the standardwebhooks package (pip install
standardwebhooks) does the same check: Webhook(secret).verify(body, headers).
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE = 5 * 60  # seconds webhook-timestamp may be from now
MAX_BODY = 10 << 20


class VerificationError(Exception):
    pass


def secret_key(secret):
    """Returns the HMAC key of a "whsec_..." secret: the base64 after the prefix."""
    if secret.startswith("whsec_"):
        secret = secret[len("whsec_"):]
    try:
        return base64.b64decode(secret, validate=True)
    except binascii.Error as err:
        raise ValueError("malformed signing secret: want whsec_ and standard base64") from err


def verify(keys, headers, body, now=None):
    """Checks the Standard Webhooks v1 signature of body (bytes, exactly as
    received) under any of keys; raises VerificationError when it fails."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise VerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts = int(timestamp)
    except ValueError:
        raise VerificationError("webhook-timestamp is not unix seconds") from None
    now = int(time.time()) if now is None else now
    if abs(now - ts) > TOLERANCE:
        raise VerificationError(f"webhook-timestamp is {ts - now}s from now")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    for key in keys:
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
        for entry in signatures.split():
            version, _, sig = entry.partition(",")
            if version == "v1" and hmac.compare_digest(sig.encode(), expected):
                return
    raise VerificationError("no v1 signature matches")


def handler(keys):
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                self.reply(411, "send a Content-Length")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self.reply(400, "bad Content-Length")
                return
            if length < 0 or length > MAX_BODY:
                self.reply(413, "body too large")
                return
            # The body exactly as it arrived: the signature covers these bytes.
            # Never json.loads and json.dumps it before verifying.
            body = self.rfile.read(length)
            try:
                verify(keys, self.headers, body)
            except VerificationError as err:
                print(f"rejected: {err}", file=sys.stderr, flush=True)
                self.reply(401, "invalid signature")
                return
            # webhook-id stays the same across retries of a job: deduplicate on it.
            h = self.headers
            print(f"accepted webhook-id={h.get('webhook-id')} job={h.get('Kairos-Job-Id')} "
                  f"attempt={h.get('Kairos-Attempt')} bytes={len(body)}", flush=True)
            self.reply(204)

        # A topic may use another method; the check is the same.
        do_PUT = do_PATCH = do_DELETE = do_GET = do_POST

        def reply(self, status, text=""):
            self.send_response(status)
            if text:
                body = (text + "\n").encode()
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.end_headers()

        def log_message(self, format, *args):
            pass  # one line per accepted callback is enough

    return Receiver


def main():
    parser = argparse.ArgumentParser(description="A minimal verifying kairos callback receiver.")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 9000),
                        help="port to listen on, on 127.0.0.1 (env PORT)")
    args = parser.parse_args()
    secrets = [s for s in (os.environ.get("KAIROS_SECRET_CURRENT"), os.environ.get("KAIROS_SECRET_NEXT")) if s]
    if not secrets:
        sys.exit("set KAIROS_SECRET_CURRENT to the tenant's signing secret (whsec_..., from GET /v1/signing-keys)")
    keys = [secret_key(s) for s in secrets]
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(keys))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
