// The receiver side: checking that a callback came from kairos. A callback
// carries two signatures, both keyed by the tenant's (or topic's) whsec_
// secret:
//
//   - Standard Webhooks: webhook-id, webhook-timestamp (unix seconds) and
//     webhook-signature ("v1,<base64 HMAC-SHA256 of id.timestamp.body>",
//     space-separated when there are several);
//   - Kairos-Signature: a JWT, HS256 only, with iss "kairos", sub the URL
//     kairos called, iat/nbf/exp, jti unique per attempt, and body the
//     unpadded base64url SHA-256 of the body.
//
// Web Crypto only (globalThis.crypto.subtle): Node 18+, Deno, Bun, workers.

/** Why a callback did not verify. */
export class VerificationError extends Error {
  /** "missing", "invalid" or "timestamp". */
  readonly reason: "missing" | "invalid" | "timestamp";
  constructor(reason: "missing" | "invalid" | "timestamp", message: string) {
    super(message);
    this.name = "VerificationError";
    this.reason = reason;
  }
}

/** Request headers: a fetch Headers, or node's IncomingMessage.headers. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The secrets to accept: pass current and next during a rotation. */
  secrets: string[];
  /** How far webhook-timestamp may be from now, and the leeway of exp/nbf/iat; seconds, default 300. */
  toleranceSeconds?: number;
  /** When set, the sub claim of Kairos-Signature must equal it: the URL as configured in the topic or job. */
  url?: string;
  /** The current time in milliseconds; default Date.now(). */
  now?: () => number;
  /** Also require Kairos-Signature (default true). */
  requireKairosSignature?: boolean;
}

/** The claims of a verified Kairos-Signature. */
export interface KairosClaims {
  iss: string;
  sub: string;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
  body: string;
}

/** What a verified callback says about itself. */
export interface VerifiedCallback {
  /** webhook-id: stable across the retries of one job; deduplicate on it. */
  webhookId: string;
  timestamp: number;
  claims?: KairosClaims;
}

const enc = new TextEncoder();

/** Bytes backed by an ArrayBuffer, as Web Crypto takes them. */
type Bytes = Uint8Array<ArrayBuffer>;

/**
 * verifyCallback checks both signatures of a callback over body, exactly as
 * received (never JSON.parse and re-stringify it first), against any of
 * secrets. It resolves with what the callback says about itself, and rejects
 * with a VerificationError naming the header that failed.
 */
export async function verifyCallback(headers: HeadersLike, body: Uint8Array | ArrayBuffer | string, opts: VerifyOptions): Promise<VerifiedCallback> {
  if (!opts.secrets || opts.secrets.length === 0) throw new TypeError("verifyCallback: no secrets given");
  const keys = await Promise.all(opts.secrets.map(importSecret));
  const bytes: Bytes = typeof body === "string" ? enc.encode(body) : new Uint8Array(body);
  const tol = opts.toleranceSeconds ?? 300;
  const now = Math.floor((opts.now ?? Date.now)() / 1000);
  const get = headerGetter(headers);

  const id = get("webhook-id");
  const tsText = get("webhook-timestamp");
  const sigs = get("webhook-signature");
  const token = get("kairos-signature");
  for (const [name, v] of [["webhook-id", id], ["webhook-timestamp", tsText], ["webhook-signature", sigs]] as const) {
    if (!v) throw new VerificationError("missing", `${name} header: missing signature`);
  }
  const requireToken = opts.requireKairosSignature ?? true;
  if (requireToken && !token) throw new VerificationError("missing", "kairos-signature header: missing signature");

  // Standard Webhooks.
  if (!/^\d+$/.test(tsText!)) throw new VerificationError("invalid", "webhook-timestamp header: not unix seconds");
  const ts = Number(tsText);
  if (Math.abs(now - ts) > tol) {
    throw new VerificationError("timestamp", `webhook-timestamp header: ${ts - now}s from now, tolerance ${tol}s`);
  }
  const signed = concat(enc.encode(`${id}.${tsText}.`), bytes);
  let ok = false;
  outer: for (const entry of sigs!.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const mac = decodeBase64(entry.slice(comma + 1), false);
    if (!mac) continue;
    for (const k of keys) {
      if (await crypto.subtle.verify("HMAC", k, mac, signed)) {
        ok = true;
        break outer;
      }
    }
  }
  if (!ok) throw new VerificationError("invalid", "webhook-signature header: no v1 signature matches");

  const out: VerifiedCallback = { webhookId: id!, timestamp: ts };
  if (token) out.claims = await verifyToken(keys, token, bytes, tol, now, opts.url);
  return out;
}

/**
 * verifyRequest reads a fetch Request's body (a Request of a worker, Deno
 * or Bun server, or undici), verifies it and returns the raw body.
 */
export async function verifyRequest(req: Request, opts: VerifyOptions): Promise<{ body: Bytes; callback: VerifiedCallback }> {
  const body = new Uint8Array(await req.arrayBuffer());
  const callback = await verifyCallback(req.headers, body, opts);
  return { body, callback };
}

async function verifyToken(keys: CryptoKey[], token: string, body: Bytes, tol: number, now: number, url?: string): Promise<KairosClaims> {
  const fail = (msg: string, reason: "invalid" | "timestamp" = "invalid") => new VerificationError(reason, `kairos-signature header: ${msg}`);
  const parts = token.split(".");
  if (parts.length !== 3) throw fail("not a compact JWT");
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: string };
  let claims: Partial<KairosClaims>;
  try {
    header = JSON.parse(new TextDecoder().decode(decodeBase64(h, true) ?? new Uint8Array()));
    claims = JSON.parse(new TextDecoder().decode(decodeBase64(p, true) ?? new Uint8Array()));
  } catch {
    throw fail("malformed header or claims");
  }
  if (header?.alg !== "HS256") throw fail(`algorithm ${String(header?.alg)}, want HS256`);
  const mac = decodeBase64(s, true);
  if (!mac) throw fail("malformed signature");
  const signed = enc.encode(`${h}.${p}`);
  let ok = false;
  for (const k of keys) {
    if (await crypto.subtle.verify("HMAC", k, mac, signed)) {
      ok = true;
      break;
    }
  }
  if (!ok) throw fail("signature does not match");
  if (claims.iss !== "kairos") throw fail(`issuer ${String(claims.iss)}, want kairos`);
  if (typeof claims.exp !== "number") throw fail("no exp claim");
  if (now > claims.exp + tol) throw fail("token expired", "timestamp");
  if (typeof claims.nbf === "number" && now < claims.nbf - tol) throw fail("token not valid yet", "timestamp");
  if (typeof claims.iat === "number" && now < claims.iat - tol) throw fail("token used before issued", "timestamp");
  if (url !== undefined && claims.sub !== url) throw fail(`subject ${String(claims.sub)}, want ${url}`);
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
  if (!timingSafeEqual(enc.encode(String(claims.body)), enc.encode(encodeBase64Url(sum)))) {
    throw fail("body claim does not match the body");
  }
  return claims as KairosClaims;
}

/** importSecret makes the HMAC key of a "whsec_..." secret (the prefix is optional). */
async function importSecret(secret: string): Promise<CryptoKey> {
  const raw = decodeBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret, false);
  if (!raw || raw.length === 0) throw new TypeError("malformed signing secret: want whsec_ and standard base64");
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify", "sign"]);
}

function headerGetter(h: HeadersLike): (name: string) => string | undefined {
  if (typeof (h as Headers).get === "function") {
    return (name) => (h as Headers).get(name) ?? undefined;
  }
  const lower: Record<string, string | string[] | undefined> = {};
  for (const [k, v] of Object.entries(h)) lower[k.toLowerCase()] = v;
  return (name) => {
    const v = lower[name];
    return Array.isArray(v) ? v.join(", ") : v;
  };
}

function concat(a: Bytes, b: Bytes): Bytes {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** decodeBase64 decodes standard (url false, padded) or unpadded base64url (url true); undefined when malformed. */
function decodeBase64(s: string, url: boolean): Bytes | undefined {
  const re = url ? /^[A-Za-z0-9_-]*$/ : /^[A-Za-z0-9+/]*={0,2}$/;
  if (!re.test(s) || (!url && s.length % 4 !== 0)) return undefined;
  let std = url ? s.replace(/-/g, "+").replace(/_/g, "/") : s;
  while (std.length % 4 !== 0) std += "=";
  try {
    const bin = atob(std);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

function encodeBase64Url(b: Uint8Array): string {
  let bin = "";
  for (const c of b) bin += String.fromCharCode(c);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/**
 * signCallback signs body the way kairos does, for tests of a receiver:
 * it returns the four headers of a callback to url.
 */
export async function signCallback(secret: string, body: Uint8Array | string, o: { msgId: string; deliveryId?: string; url: string; timestamp?: number }): Promise<Record<string, string>> {
  const raw = decodeBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret, false);
  if (!raw || raw.length === 0) throw new TypeError("malformed signing secret: want whsec_ and standard base64");
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const bytes: Bytes = typeof body === "string" ? enc.encode(body) : new Uint8Array(body);
  const ts = o.timestamp ?? Math.floor(Date.now() / 1000);
  const wh = new Uint8Array(await crypto.subtle.sign("HMAC", key, concat(enc.encode(`${o.msgId}.${ts}.`), bytes)));
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const claims = { iss: "kairos", sub: o.url, iat: ts, nbf: ts, exp: ts + 300, jti: o.deliveryId ?? `${o.msgId}.1`, body: encodeBase64Url(sum) };
  const unsigned = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${encodeBase64Url(enc.encode(JSON.stringify(claims)))}`;
  const jwtSig = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(unsigned)));
  let b64 = "";
  for (const c of wh) b64 += String.fromCharCode(c);
  return {
    "webhook-id": o.msgId,
    "webhook-timestamp": String(ts),
    "webhook-signature": `v1,${btoa(b64)}`,
    "kairos-signature": `${unsigned}.${encodeBase64Url(jwtSig)}`,
  };
}
