// What a success_url or failure_url receiver reads: the answer a
// notification carries, as bytes.
import type { Notification } from "./types.js";

/**
 * notificationBody returns the receiver's answer a notification carries: `response` as
 * UTF-8 bytes, or decoded from base64 when `response_encoding` is "base64". Check the
 * notification's signatures first (verifyCallback). An unknown encoding throws.
 */
export function notificationBody(n: Notification): Uint8Array {
  const enc: string | undefined = n.response_encoding;
  if (enc === undefined || enc === "") {
    return new TextEncoder().encode(n.response);
  }
  if (enc === "base64") {
    const bin = atob(n.response); // throws on malformed base64
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  }
  throw new Error(`unknown response_encoding ${JSON.stringify(enc)}: kairos sends none (text) or "base64"`);
}
