// Jobs of a topic (list with state filter and paging), one job (detail and
// actions), and creating a job.
import { call, session, tenantQuery, topicPath, jobPath } from './api.js';
import { $, h, rows, showError, confirmAction, notice, busy, timeEl, ms, stateBadge, lastAttempt,
  toLocalInput, fromLocalInput, reportError } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, link, findTopic } from './store.js';

// ---- list ----

const list = { topic: null, state: '', cursor: '', next: '' };

export const jobsView = {
  async show(p) {
    await loadTopics();
    list.topic = fillTopicSelect($('jobs-topic'), { tenant: p.get('tenant'), name: p.get('topic') });
    list.state = p.get('state') || '';
    list.cursor = p.get('cursor') || '';
    $('jobs-state').value = list.state;
    await this.refresh();
  },
  async refresh() {
    const t = list.topic;
    $('jobs-title').textContent = t ? `Jobs of ${t.name}` : 'Jobs';
    $('jobs-new').href = link('new', t ? { tenant: t.tenant, topic: t.name } : {});
    if (!t) { rows($('jobs-table'), [], () => []); $('jobs-empty').hidden = false; return; }
    const page = await call('GET', topicPath(t, '/jobs'), { query: tenantQuery(t.tenant, { state: list.state, cursor: list.cursor, limit: 25 }) });
    list.next = page.next_cursor || '';
    rows($('jobs-table'), page.jobs || [], (j) => [
      ['Job', h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: j.id }), 'data-testid': `job-link-${j.id}`, text: j.id }), 'wrap'],
      ['State', stateBadge(j.state)],
      ['Run at', timeEl(j.next_run_at || j.run_at)],
      ['Attempts', `${j.attempts}${j.max_attempts ? ' / ' + j.max_attempts : ''}`, 'num'],
      ['Last attempt', lastAttempt(j), 'wrap'],
    ]);
    $('jobs-empty').hidden = (page.jobs || []).length > 0;
    $('jobs-next').disabled = !list.next;
    $('jobs-first').hidden = !list.cursor;
    $('jobs-next').closest('.pager').hidden = !list.next && !list.cursor;
  },
};

function goList(extra = {}) {
  const t = selectedTopic($('jobs-topic'));
  location.hash = link('jobs', { tenant: t?.tenant, topic: t?.name, state: $('jobs-state').value, ...extra });
}
$('jobs-topic').addEventListener('change', () => goList());
$('jobs-state').addEventListener('change', () => goList());
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
    const j = await call('GET', jobPath(topicOf(), cur.id), { query: tenantQuery(cur.tenant) });
    cur.job = j;
    render(j);
  },
};

function dl(el, pairs) {
  el.replaceChildren(...pairs.flatMap(([k, v, testid]) => [h('dt', { text: k }), h('dd', { 'data-testid': testid || null }, v ?? '—')]));
}

function render(j) {
  $('job-id').textContent = j.id;
  $('job-state').replaceChildren(stateBadge(j.state));
  const pending = ['scheduled', 'ready', 'active', 'retrying'].includes(j.state);
  $('job-fire').hidden = $('job-resched-group').hidden = $('job-cancel').hidden = !pending;
  $('job-replay').hidden = j.state !== 'dead';
  $('job-noactions').hidden = pending || j.state === 'dead';
  if (!$('job-resched-at').value && pending) {
    $('job-resched-at').value = toLocalInput(new Date(Math.max(Date.now() + 60000, Date.parse(j.next_run_at || j.run_at) || 0)));
  }
  dl($('job-schedule'), [
    ['Run at', timeEl(j.run_at), 'job-run-at'],
    ['Next run at', timeEl(j.next_run_at), 'job-next-run-at'],
    ['Created at', timeEl(j.created_at)],
    ['Done at', timeEl(j.done_at), 'job-done-at'],
  ]);
  const topic = findTopic(j.tenant, j.topic);
  const dflt = (v, f) => v || (topic ? `${f(topic)} (topic default)` : 'topic default');
  dl($('job-delivery'), [
    ...(session.admin ? [['Tenant', j.tenant]] : []),
    ['Topic', h('a', { href: link('jobs', { tenant: j.tenant, topic: j.topic }), text: j.topic })],
    ['Callback', dflt(j.callback_url, (t) => t.callback_url)],
    ['Method', dflt(j.method, (t) => t.method)],
    ['Timeout', dflt(j.timeout, (t) => t.timeout)],
    ['Attempts', `${j.attempts} of ${j.max_attempts || (topic ? topic.max_attempts : '(topic default)')}`, 'job-attempts'],
    ['Backoff', j.backoff ? `${j.backoff.initial || 'default'} – ${j.backoff.max || 'default'}` : dflt('', (t) => `${t.backoff.initial} – ${t.backoff.max}`)],
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
    ['Error', a.event === 'replay' ? `replayed: the next attempt is #${a.n + 1}` : (a.error || '—'), 'wrap'],
    ['Duration', ms(a.duration_ms), 'num'],
    ['Response', a.response ? h('code', { text: a.response }) : '—', 'wrap'],
  ]);
  $('attempt-empty').hidden = log.length > 0;
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
    message: 'The job is removed and will not fire. Its id becomes free for a new job.',
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

