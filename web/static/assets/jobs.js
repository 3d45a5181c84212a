// Jobs of a topic (list with state filter and paging), one job (detail and
// actions), and creating a job.
import { call, session, tenantQuery, topicPath, jobPath } from './api.js';
import { $, h, rows, showError, confirmAction, notice, busy, timeEl, ms, stateBadge, lastAttempt,
  toLocalInput, fromLocalInput, reportError, dur, url, attemptsText, span } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, link, findTopic, topicWithData } from './store.js';

// ---- list ----

const list = { topic: null, state: '', labels: '', cursor: '', next: '' };

// parseLabels reads the label filter "key:value, key:value" into an
// object; null for an entry that is not key:value.
function parseLabels(text) {
  const out = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = part.indexOf(':');
    if (i <= 0) return null;
    out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

export const jobsView = {
  async show(p) {
    await loadTopics();
    // No topic asked for: the first one that has jobs, not merely the
    // first by name.
    const want = p.get('topic') ? { tenant: p.get('tenant'), name: p.get('topic') } : await topicWithData('/jobs');
    list.topic = fillTopicSelect($('jobs-topic'), want);
    list.state = p.get('state') || '';
    list.labels = p.get('label') || '';
    list.cursor = p.get('cursor') || '';
    $('jobs-state').value = list.state;
    $('jobs-label').value = list.labels;
    await this.refresh();
  },
  async refresh() {
    const t = list.topic;
    $('jobs-title').textContent = t ? `Jobs of ${t.name}` : 'Jobs';
    $('jobs-new').href = link('new', t ? { tenant: t.tenant, topic: t.name } : {});
    if (!t) { rows($('jobs-table'), [], () => []); $('jobs-empty').hidden = false; return; }
    const labels = parseLabels(list.labels) || {};
    const label = Object.entries(labels).map(([k, v]) => `${k}:${v}`);
    const page = await call('GET', topicPath(t, '/jobs'), { query: tenantQuery(t.tenant, { state: list.state, label, cursor: list.cursor, limit: 25 }) });
    list.next = page.next_cursor || '';
    rows($('jobs-table'), page.jobs || [], (j) => [
      ['Job', h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: j.id }), 'data-testid': `job-link-${j.id}`, text: j.id }), 'wrap'],
      ['State', stateBadge(j.state)],
      ['Run at', timeEl(j.next_run_at || j.run_at)],
      ['Attempts', attemptsText(j, j.max_attempts || t.max_attempts), 'num'],
      ['Last attempt', lastAttempt(j), 'wrap'],
    ]);
    $('jobs-empty').hidden = (page.jobs || []).length > 0;
    $('jobs-next').disabled = !list.next;
    $('jobs-first').hidden = !list.cursor;
    $('jobs-next').closest('.pager').hidden = !list.next && !list.cursor;
    // a bulk action needs a filter: the API refuses one on every job
    $('jobs-bulk-cancel').disabled = $('jobs-bulk-replay').disabled = !list.state && label.length === 0;
  },
};

function goList(extra = {}) {
  const t = selectedTopic($('jobs-topic'));
  location.hash = link('jobs', { tenant: t?.tenant, topic: t?.name, state: $('jobs-state').value, label: $('jobs-label').value.trim(), ...extra });
}
$('jobs-topic').addEventListener('change', () => goList());
$('jobs-state').addEventListener('change', () => goList());
$('jobs-label').addEventListener('change', () => goList());

// ---- bulk cancel and replay of the jobs the filter selects ----

// bulk starts a bulk operation on the listed topic's jobs that the filter
// selects (every page, not only this one) and shows its progress until it
// is done.
function bulk(action) {
  const t = list.topic;
  const labels = parseLabels(list.labels);
  if (!t || labels === null) { notice('Labels are key:value, comma-separated'); return; }
  const filter = {};
  if (list.state) filter.state = list.state;
  if (Object.keys(labels).length) filter.labels = labels;
  const what = [list.state && `state ${list.state}`, Object.keys(labels).length && `labels ${list.labels}`].filter(Boolean).join(' and ');
  confirmAction({
    title: action === 'cancel' ? 'Cancel matching jobs' : 'Replay matching dead jobs',
    message: `${action === 'cancel' ? 'Cancel every job not yet delivered' : 'Replay every dead job'} of ${t.name} with ${what}, on every page. This runs in the background.`,
    ok: action === 'cancel' ? 'Cancel them' : 'Replay them',
    action: async () => {
      const op = await call('POST', topicPath(t, '/jobs/bulk'), { query: tenantQuery(t.tenant), body: { action, filter } });
      watchOperation(op, t);
    },
  });
}

async function watchOperation(op, t) {
  $('jobs-bulk').hidden = false;
  $('jobs-bulk-title').textContent = `Bulk ${op.action} ${op.id}`;
  for (;;) {
    const handled = op.done + op.failed;
    $('jobs-bulk-bar').max = Math.max(op.matched, 1);
    $('jobs-bulk-bar').value = op.state === 'done' ? Math.max(op.matched, 1) : handled;
    $('jobs-bulk-text').textContent = `${op.state}: ${op.done} ${op.action === 'cancel' ? 'cancelled' : 'replayed'} of ${op.matched}` +
      (op.failed ? `, ${op.failed} could not be (being delivered, or no longer dead)` : '');
    if (op.state === 'done') break;
    await new Promise((r) => setTimeout(r, 300));
    try {
      op = await call('GET', `/v1/operations/${encodeURIComponent(op.id)}`, { query: tenantQuery(t.tenant) });
    } catch (e) { reportError(e); return; }
  }
  notice(`Bulk ${op.action} done: ${op.done} jobs`);
  if (list.topic === t) jobsView.refresh().catch(reportError);
}
$('jobs-bulk-cancel').addEventListener('click', () => bulk('cancel'));
$('jobs-bulk-replay').addEventListener('click', () => bulk('replay'));
$('jobs-filter').addEventListener('submit', (e) => { e.preventDefault(); goList(); });
$('jobs-next').addEventListener('click', () => list.next && goList({ cursor: list.next }));
$('jobs-first').addEventListener('click', () => goList());

// ---- one job ----

const cur = { tenant: '', topic: '', id: '', job: null };
const topicOf = () => ({ tenant: cur.tenant, name: cur.topic });

export const jobView = {
  async show(p) {
    const same = cur.id === p.get('id') && cur.topic === p.get('topic');
    Object.assign(cur, { tenant: p.get('tenant') || '', topic: p.get('topic') || '', id: p.get('id') || '' });
    if (!same) { cur.job = null; $('job-resched-at').value = ''; }
    $('job-back').href = link('jobs', { tenant: cur.tenant, topic: cur.topic });
    $('job-back').textContent = `← Jobs of ${cur.topic}`;
    await this.refresh();
  },
  async refresh() {
    // The topic too, read fresh: its defaults and headers complete the
    // job's, and its flow control (paused, breaker) may be holding it.
    const [j, topic] = await Promise.all([
      call('GET', jobPath(topicOf(), cur.id), { query: tenantQuery(cur.tenant) }),
      call('GET', topicPath(topicOf()), { query: tenantQuery(cur.tenant) }).catch(() => findTopic(cur.tenant, cur.topic) || null),
    ]);
    cur.job = j;
    render(j, topic);
  },
};

function dl(el, pairs) {
  el.replaceChildren(...pairs.flatMap(([k, v, testid]) => [h('dt', { text: k }), h('dd', { 'data-testid': testid || null }, v ?? '—')]));
}

// delivery links a fan-out delivery (a job labelled subscription=<sub>,
// with id "<message id>.<sub>") to its message and its subscription.
function delivery(j) {
  const sub = j.labels?.subscription;
  if (!sub || !j.id.endsWith('.' + sub)) return null;
  const at = { tenant: j.tenant, topic: j.topic };
  const msg = j.id.slice(0, -sub.length - 1);
  return span('delivery of message ', h('a', { href: link('message', { ...at, id: msg }), 'data-testid': 'job-message', text: msg }),
    ' to subscription ', h('a', { href: link('subscriptions', at), text: sub }));
}

function render(j, topic) {
  $('job-id').textContent = j.id;
  $('job-state').replaceChildren(stateBadge(j.state));
  const pending = ['scheduled', 'ready', 'active', 'retrying'].includes(j.state);
  $('job-fire').hidden = $('job-resched-group').hidden = $('job-cancel').hidden = !pending;
  const replayable = j.state === 'dead' || j.state === 'expired';
  $('job-replay').hidden = !replayable;
  $('job-noactions').hidden = pending || replayable;
  if (!$('job-resched-at').value && pending) {
    $('job-resched-at').value = toLocalInput(new Date(Math.max(Date.now() + 60000, Date.parse(j.next_run_at || j.run_at) || 0)));
  }
  dl($('job-schedule'), [
    ['Run at', timeEl(j.run_at), 'job-run-at'],
    ['Next run at', timeEl(j.next_run_at), 'job-next-run-at'],
    ...(flowNote(j, topic) ? [['Flow control', flowNote(j, topic), 'job-held']] : []),
    ['Created at', timeEl(j.created_at)],
    ['Done at', timeEl(j.done_at), 'job-done-at'],
    ...(j.expires_at ? [['Expires at', timeEl(j.expires_at), 'job-expires-at']] : []),
    ...(j.priority ? [['Priority', `${j.priority} (first among the flow's jobs held back together)`, 'job-priority']] : []),
  ]);
  const dflt = (v, f) => v || (topic ? `${f(topic)} (topic default)` : 'topic default');
  const max = j.max_attempts || topic?.max_attempts;
  dl($('job-delivery'), [
    ...(session.admin ? [['Tenant', j.tenant]] : []),
    ['Topic', h('a', { href: link('jobs', { tenant: j.tenant, topic: j.topic }), text: j.topic })],
    ...(delivery(j) ? [['Fan-out', delivery(j), 'job-fanout']] : []),
    ['Callback', j.callback_url ? url(j.callback_url) : topic ? span(url(topic.callback_url), ' (topic default)') : 'topic default'],
    ['Method', dflt(j.method, (t) => t.method)],
    ['Timeout', dflt(dur(j.timeout || ''), (t) => dur(t.timeout))],
    ['Attempts', max ? attemptsText(j, max) : `${j.attempts} of the topic's limit`, 'job-attempts'],
    ['Backoff', j.backoff ? `${j.backoff.initial ? dur(j.backoff.initial) : 'default'} – ${j.backoff.max ? dur(j.backoff.max) : 'default'}` : dflt('', (t) => `${dur(t.backoff.initial)} – ${dur(t.backoff.max)}`)],
  ]);
  // The API masks the values of secret-looking headers; the page shows
  // what it is given.
  const hdrs = Object.entries(j.headers || {});
  dl($('job-headers'), hdrs.map(([k, v]) => [k, v]));
  $('job-noheaders').hidden = hdrs.length > 0;
  $('job-payload').textContent = j.payload === undefined ? '(empty body)' : JSON.stringify(j.payload, null, 2);
  const log = j.attempt_log || [];
  rows($('attempt-log'), log, (a) => [
    ['#', String(a.n), 'num'],
    ['At', timeEl(a.at)],
    ['Status', a.status ? h('span', { class: a.status < 300 ? 'good' : 'bad', text: String(a.status) }) : '—'],
    ['Error', a.event === 'replay' ? `replayed: the next attempt is #${a.n + 1}`
      : a.event === 'expired' ? 'expired: no attempt may start after expires_at' : (a.error || '—'), 'wrap'],
    ['Duration', ms(a.duration_ms), 'num'],
    ['Request headers', a.event ? '—' : requestHeaders(j, topic, a), 'wrap'],
    ['Response', a.event ? '—' : response(a, topic), 'wrap'],
  ]);
  $('attempt-empty').hidden = log.length > 0;
}

// flowNote says when the topic's flow control holds the job back, or (for
// a job delivered late) may have: a held job otherwise reads as late with
// no reason given. It reads what the job and topic answers show: a job
// whose turn under the rate limit comes later than its run_at, a due job
// of a paused topic or of one whose breaker is open, a job past due
// waiting for one of its topic's parallelism slots.
function flowNote(j, t) {
  if (!t) return null;
  const now = Date.now();
  const next = Date.parse(j.next_run_at || ''), runAt = Date.parse(j.run_at);
  const due = next <= now;
  const waiting = j.state === 'scheduled' || j.state === 'ready';
  const note = (kind, text) => h('span', { class: 'held', 'data-held': kind, text });
  const rate = t.rate ? `${t.rate.limit} per ${dur(t.rate.period)}` : '';
  if (waiting && t.paused && due) return note('pause', 'Held: its topic is paused; it fires when the topic is resumed.');
  if (waiting && t.breaker && t.breaker.state !== 'closed' && due) {
    return note('breaker', `Held by its topic's circuit breaker (${t.breaker.state}` +
      (t.breaker.open_until ? ` until ${new Date(t.breaker.open_until).toLocaleTimeString()}` : '') + ').');
  }
  if (waiting && rate && next > runAt && next > now) {
    return note('rate', `Held by its topic's rate limit (${rate}): its turn is at ${new Date(next).toLocaleTimeString()}, ` +
      `${dur(Math.round((next - runAt) / 1000) + 's')} after its run_at.`);
  }
  if (waiting && t.parallelism && now - next > 1000) {
    return note('parallelism', `Held by its topic's parallelism limit (${t.parallelism} in flight): it starts when a slot frees.`);
  }
  const first = (j.attempt_log || []).find((a) => !a.event);
  const late = first && !j.replayed_after ? Date.parse(first.at) - runAt : 0;
  if (late > 1000 && (rate || t.parallelism)) {
    const limits = [rate, t.parallelism ? `${t.parallelism} in flight` : ''].filter(Boolean).join(', ');
    return note('late', `Its first attempt started ${dur(Math.round(late / 1000) + 's')} after its run_at: ` +
      `its topic's flow limits (${limits}) hold jobs back when more are due than they allow.`);
  }
  return null;
}

// requestHeaders lists the headers attempt a was sent with, rebuilt from
// the job and its topic as they are now (kairos does not store what each
// attempt sent): the topic's headers, the job's over them, Content-Type,
// the Kairos-* headers and the signatures. Secret values are masked: the
// API masks the headers' (Authorization, X-Api-Key, ...), and the
// signatures are never shown.
function requestHeaders(j, t, a) {
  const MASK = '••••••••';
  const hs = [];
  const put = (k, v) => {
    const at = hs.findIndex(([n]) => n.toLowerCase() === k.toLowerCase());
    at >= 0 ? (hs[at] = [k, v]) : hs.push([k, v]);
  };
  if (!/~(dead|ok)\.\d+$/.test(j.id)) for (const [k, v] of Object.entries(t?.headers || {})) put(k, v);
  for (const [k, v] of Object.entries(j.headers || {})) put(k, v);
  if (!hs.some(([k]) => k.toLowerCase() === 'content-type')) put('Content-Type', 'application/json');
  put('User-Agent', 'kairos');
  put('Kairos-Job-Id', j.id);
  put('Kairos-Topic', j.topic);
  put('Kairos-Attempt', String(a.n));
  put('Kairos-Scheduled-At', new Date(j.run_at).toISOString());
  const sid = /^(.*)@\d+$/.exec(j.id);
  if (sid) put('Kairos-Schedule-Id', sid[1]);
  put('webhook-id', MASK);
  put('webhook-timestamp', String(Math.floor(Date.parse(a.at) / 1000)));
  put('webhook-signature', MASK);
  put('Kairos-Signature', MASK);
  return h('details', { class: 'req', 'data-testid': `request-headers-${a.n}` },
    h('summary', { text: `${hs.length} headers` }),
    h('dl', { class: 'kv small' }, hs.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])));
}

// response shows what the receiver answered attempt a, beside the
// request: its status, the headers kairos keeps (Content-Type,
// Retry-After, Location) and the start of its body, up to the topic's
// response_bytes.
function response(a, t) {
  const hs = Object.entries(a.response_headers || {});
  let body;
  if (a.response) body = h('pre', { class: 'resp-body', 'data-testid': `response-body-${a.n}`, text: a.response });
  else if (!a.status) body = h('span', { class: 'muted', text: 'no answer' });
  else if (t && t.response_bytes === 0) body = h('span', { class: 'muted', text: 'body not kept (response_bytes 0)' });
  else body = h('span', { class: 'muted', text: '(empty body)' });
  return h('div', { class: 'resp', 'data-testid': `response-${a.n}` },
    a.status ? h('span', { class: a.status < 300 ? 'good' : 'bad', 'data-testid': `response-status-${a.n}`, text: `HTTP ${a.status}` }) : null,
    hs.length ? h('dl', { class: 'kv small', 'data-testid': `response-headers-${a.n}` }, hs.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])) : null,
    body);
}

async function act(button, f, done) {
  try {
    await busy(button, f);
    notice(done);
    await jobView.refresh();
  } catch (e) {
    reportError(e);
  }
}

$('job-fire').addEventListener('click', (e) => act(e.currentTarget,
  () => call('PATCH', jobPath(topicOf(), cur.id), { query: tenantQuery(cur.tenant), body: { delay: '0s' } }), `Job ${cur.id} fires now.`));
$('job-resched').addEventListener('click', (e) => act(e.currentTarget,
  () => call('PATCH', jobPath(topicOf(), cur.id), { query: tenantQuery(cur.tenant), body: { run_at: fromLocalInput($('job-resched-at').value) } }),
  `Job ${cur.id} rescheduled.`));
$('job-replay').addEventListener('click', (e) => act(e.currentTarget,
  () => call('POST', jobPath(topicOf(), cur.id, '/retry'), { query: tenantQuery(cur.tenant) }), `Job ${cur.id} replayed: it fires now.`));
$('job-cancel').addEventListener('click', async () => {
  const id = cur.id;
  const ok = await confirmAction({
    title: `Cancel job ${id}?`,
    message: 'The job will not fire. It stays readable, cancelled, for the retention period; its id becomes free for a new job.',
    ok: 'Cancel job',
    action: async () => { await call('DELETE', jobPath(topicOf(), id), { query: tenantQuery(cur.tenant) }); return true; },
  });
  if (ok) {
    notice(`Job ${id} cancelled.`);
    location.hash = link('jobs', { tenant: cur.tenant, topic: cur.topic });
  }
});

// ---- create ----

export const newView = {
  async show(p) {
    await loadTopics();
    fillTopicSelect($('new-topic'), { tenant: p.get('tenant'), name: p.get('topic') });
    showError($('new-error'), null);
    if (!$('new-run-at').value) $('new-run-at').value = toLocalInput(new Date(Date.now() + 5 * 60000));
  },
};

function whenChanged() {
  const delay = $('new-when-delay').checked;
  $('new-delay-row').hidden = !delay;
  $('new-at-row').hidden = delay;
}
$('new-when-delay').addEventListener('change', whenChanged);
$('new-when-at').addEventListener('change', whenChanged);

$('new-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const err = $('new-error');
  showError(err, null);
  try {
    const t = selectedTopic($('new-topic'));
    if (!t) throw new Error('topic: register a topic first (Topics page)');
    const fields = {};
    const id = $('new-id').value.trim();
    if (id) fields.id = id;
    if ($('new-when-delay').checked) fields.delay = $('new-delay').value.trim();
    else fields.run_at = fromLocalInput($('new-run-at').value);
    // The payload goes into the body exactly as typed, once it parses.
    const raw = $('new-payload').value.trim();
    if (raw) {
      try { JSON.parse(raw); } catch (x) { throw new Error('payload: not valid JSON: ' + x.message); }
    }
    let body = JSON.stringify(fields);
    if (raw) body = body.slice(0, -1) + (body.length > 2 ? ',' : '') + '"payload":' + raw + '}';
    const j = await busy($('new-submit'), () => call('POST', topicPath(t, '/jobs'), { query: tenantQuery(t.tenant), body }));
    notice(`Job ${j.id} ${j.result === 'replaced' ? 'replaced (it had not fired)' : 'created'}: ${j.state}.`);
    $('new-id').value = '';
    location.hash = link('job', { tenant: t.tenant, topic: t.name, id: j.id });
  } catch (x) {
    showError(err, x);
  }
});

