import type { FieldError, Problem } from "./types.js";

/**
 * KairosError is an answer of the server that refuses a call, with the
 * fields of its problem document (RFC 9457): status, type (such as
 * "urn:kairos:problem:not-found"), title, detail, and errors naming each
 * broken field of a validation problem. retryAfter is the wait in seconds
 * its Retry-After header asked for (a 503 while Redis is away or fails
 * over, a 429), or undefined.
 *
 * An answer that is not a problem document (a proxy's error page) becomes
 * a KairosError too, with the status, its text as title and the start of
 * the body as detail.
 */
export class KairosError extends Error implements Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly errors?: FieldError[];
  readonly retryAfter?: number;

  constructor(p: Problem, retryAfter?: number) {
    super(`${p.status} ${p.title}${p.detail ? ": " + p.detail : ""}`);
    this.name = "KairosError";
    this.type = p.type;
    this.title = p.title;
    this.status = p.status;
    if (p.detail !== undefined) this.detail = p.detail;
    if (p.errors !== undefined) this.errors = p.errors;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }

  /** The server's 404: no such topic, job or schedule for this tenant. */
  get notFound(): boolean {
    return this.status === 404;
  }

  /** The server's 409: the object is not in a state that allows the call. */
  get conflict(): boolean {
    return this.status === 409;
  }
}

/** Makes the KairosError of a refused call from its answer. */
export async function errorFrom(resp: Response): Promise<KairosError> {
  const text = await resp.text();
  const ct = (resp.headers.get("content-type") ?? "").split(";")[0]!.trim();
  let p: Problem | undefined;
  if (ct === "application/problem+json" || ct === "application/json") {
    try {
      const v = JSON.parse(text) as Partial<Problem>;
      if (v && typeof v === "object" && typeof v.title === "string" && v.title !== "") {
        p = { ...v, type: v.type ?? "about:blank", title: v.title, status: resp.status } as Problem;
      }
    } catch {
      // not JSON after all: described below
    }
  }
  if (!p) {
    let detail = text.trim();
    if (detail.length > 200) detail = detail.slice(0, 200) + "…";
    p = { type: "about:blank", title: resp.statusText || `HTTP ${resp.status}`, status: resp.status };
    if (detail) p.detail = detail;
  }
  return new KairosError(p, parseRetryAfter(resp.headers.get("retry-after")));
}

/** Seconds of a Retry-After header: delta-seconds or an HTTP date. */
export function parseRetryAfter(v: string | null, now: number = Date.now()): number | undefined {
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}
