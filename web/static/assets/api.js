// The /v1 API with the signed-in bearer token. The token lives in
// sessionStorage only: never in localStorage, never in a URL the page
// makes (a link's #token=… is read once and taken out: app.js).
const KEY = 'kairos.token';

export const session = {
  get token() { return sessionStorage.getItem(KEY) || ''; },
  set token(t) { t ? sessionStorage.setItem(KEY, t) : sessionStorage.removeItem(KEY); },
  // claims reads the token's payload to know who we are: the server checks
  // the signature, the page only picks which controls to show.
  get claims() {
    try {
      const part = this.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      const json = new TextDecoder().decode(Uint8Array.from(atob(part), c => c.charCodeAt(0)));
      const c = JSON.parse(json);
      return { tenant: String(c.sub || ''), admin: c.admin === true, exp: c.exp };
    } catch { return { tenant: '', admin: false }; }
  },
  get admin() { return this.claims.admin; },
};

// ApiError is a failed call: status plus the problem+json document if any.
export class ApiError extends Error {
  constructor(status, problem, text) {
    super(problem?.detail || problem?.title || text || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || null;
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(f) { onUnauthorized = f; }

// call sends method path with query (empty values left out) and a JSON body
// (an object, or a string that is already JSON), and returns the decoded
// reply (null for 204).
export async function call(method, path, { query, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (Array.isArray(v)) v.forEach((e) => url.searchParams.append(k, e)); // a repeated parameter (label)
    else if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
  }
  const headers = { Accept: 'application/json', Authorization: 'Bearer ' + session.token };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, { title: 'Network error', detail: 'kairos did not answer: ' + e.message });
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new ApiError(res.status, data && typeof data === 'object' ? data : null, text.trim());
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  return data;
}

// tenantQuery is the ?tenant= an admin adds to act on a tenant; tenant
// tokens act on their own tenant and send nothing.
export function tenantQuery(tenant, extra = {}) {
  return session.admin && tenant ? { tenant, ...extra } : { ...extra };
}

export const topicPath = (t, rest = '') => `/v1/topics/${encodeURIComponent(t.name)}${rest}`;
export const jobPath = (t, id, rest = '') => topicPath(t, `/jobs/${encodeURIComponent(id)}${rest}`);
export const schedulePath = (t, id, rest = '') => topicPath(t, `/schedules/${encodeURIComponent(id)}${rest}`);
export const subscriptionPath = (t, name, rest = '') => topicPath(t, `/subscriptions/${encodeURIComponent(name)}${rest}`);
export const messagePath = (t, id) => topicPath(t, `/messages/${encodeURIComponent(id)}`);

// listAll pages through GET path with the query until next_cursor runs out.
export async function listAll(path, query) {
  const jobs = [];
  let cursor = '';
  do {
    const page = await call('GET', path, { query: { ...query, cursor, limit: 500 } });
    jobs.push(...(page.jobs || []));
    cursor = page.next_cursor || '';
  } while (cursor);
  return jobs;
}
