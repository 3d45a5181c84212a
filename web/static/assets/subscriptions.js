// Subscriptions of a topic (GET /v1/topics/{topic}/subscriptions): each
// one's URL (masked as the API masks it), what it receives, its paused
// state, its deliveries' counts and its breaker; add and edit (PUT), pause,
// resume and delete. Field errors of a 400 are shown beside their fields.
import { ApiError, call, tenantQuery, topicPath, subscriptionPath } from './api.js';
import { $, h, rows, showError, showFieldErrors, confirmAction, notice, busy, reportError, dur, url, num } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, findTopic, link, topicLabel, topicWithData } from './store.js';
import { openPublish } from './messages.js';

const cur = { topic: null, asked: '' }; // asked: the topic the route names

export const subscriptionsView = {
  async show(p) {
    await loadTopics();
    const name = p.get('topic');
    // No topic asked for: the first one that has subscriptions.
    const want = name ? findTopic(p.get('tenant'), name) : await topicWithData('/subscriptions');
    showError($('subs-missing'), null);
    cur.asked = name || '';
    if (name && !want) {
      // Not a topic in scope: the API says why (another tenant's topic is
      // a 404, as one that does not exist).
      fillTopicSelect($('subs-topic'), null);
      $('subs-topic').value = '';
      try {
        await call('GET', topicPath({ name }), { query: tenantQuery(p.get('tenant')) });
      } catch (e) {
        cur.topic = null;
        showError($('subs-missing'), e);
        await this.refresh();
        return;
      }
      await loadTopics(); // registered since the list was read
      cur.topic = fillTopicSelect($('subs-topic'), { tenant: p.get('tenant'), name });
    } else {
      cur.topic = fillTopicSelect($('subs-topic'), want);
    }
    await this.refresh();
  },
  async refresh() {
    const t = cur.topic;
    show(!!t, t ? t.name : cur.asked);
    if (!t) {
      rows($('subs-table'), [], () => []);
      $('subs-empty').hidden = false;
      return;
    }
    const r = await call('GET', topicPath(t, '/subscriptions'), { query: tenantQuery(t.tenant) });
    const list = r.subscriptions || [];
    rows($('subs-table'), list, (s) => row(t, s));
    $('subs-empty').hidden = list.length > 0;
  },
};

// show sets the title and enables the view's buttons when a topic is shown.
function show(on, name) {
  $('subs-title').textContent = name ? `Subscriptions of ${name}` : 'Subscriptions';
  $('sub-add').disabled = $('sub-publish').disabled = $('subs-message-open').disabled = !on;
  $('subs-card').hidden = !on && !$('subs-missing').hidden;
}

function row(t, s) {
  const st = s.paused ? 'paused' : 'running';
  const deliveries = (label, n, state) => h('a', { href: link('jobs', { tenant: t.tenant, topic: t.name, state, label: `subscription:${s.name}` }),
    'data-testid': `sub-${label}-${s.name}`, title: state ? `${state} deliveries of ${s.name}` : `deliveries of ${s.name}, in any state`, text: num(n) });
  return [
    ['Subscription', h('span', { class: 'stack' },
      h('strong', { 'data-testid': `sub-${s.name}`, text: s.name }),
      h('span', {}, h('span', { class: `state ${st}`, 'data-state': st, 'data-testid': `sub-state-${s.name}`, text: s.paused ? 'paused' : 'delivering' })),
      s.description ? h('span', { class: 'muted', text: s.description }) : '',
      s.signing === 'subscription' ? h('span', { class: 'muted', text: 'signed with its own secret' }) : ''), 'wrap'],
    ['Endpoint', h('span', { class: 'stack' },
      h('span', { class: 'callback' }, h('code', { text: s.method || t.method }), ' ', url(s.url, `sub-url-${s.name}`)),
      h('span', { class: 'muted settings', 'data-testid': `sub-settings-${s.name}`, text: settings(s) })), 'cut'],
    ['Receives', h('span', { class: 'receives', 'data-testid': `sub-receives-${s.name}` },
      h('span', {}, ...receives(s)),
      s.filter ? h('code', { class: 'filter', 'data-testid': `sub-filter-${s.name}`, text: JSON.stringify(s.filter) }) : h('span', { class: 'muted', text: 'no filter' }))],
    // pending deliveries: scheduled, ready, in flight or retrying; the
    // jobs list shows them all with the label, any state
    ['Pending', deliveries('pending', s.counts.pending, ''), 'num'],
    ['Delivered', deliveries('delivered', s.counts.delivered, 'delivered'), 'num'],
    ['Dead', deliveries('dead', s.counts.dead, 'dead'), 'num'],
    ['Breaker', breaker(s), 'breaker'],
    ['Actions', h('div', { class: 'actions' },
      h('button', { type: 'button', 'data-testid': `sub-edit-${s.name}`, 'aria-label': `Edit subscription ${s.name}`, text: 'Edit', onclick: (e) => openEdit(e.currentTarget, t, s.name) }),
      s.paused ? pauseButton('Resume', 'resume', t, s.name) : pauseButton('Pause', 'pause', t, s.name),
      h('button', { type: 'button', class: 'danger', 'data-testid': `sub-delete-${s.name}`, 'aria-label': `Delete subscription ${s.name}`,
        text: 'Delete', onclick: () => remove(t, s) }))],
  ];
}

// receives says which event types a subscription receives.
function receives(s) {
  if (!s.event_types) return ['every event type'];
  if (!s.event_types.length) return ['no event type: nothing'];
  return ['event types: ', ...s.event_types.flatMap((e, i) => [i ? ', ' : '', h('code', { text: e })])];
}

// settings sums up the delivery settings a subscription sets over its
// topic's, and its flow limits.
function settings(s) {
  const parts = [];
  if (s.timeout) parts.push(`timeout ${dur(s.timeout)}`);
  if (s.max_attempts) parts.push(`${s.max_attempts} attempts`);
  if (s.backoff) parts.push(`backoff ${dur(s.backoff.initial || '') || 'topic\'s'}–${dur(s.backoff.max || '') || 'topic\'s'}`);
  if (s.rate) parts.push(`${s.rate.limit} per ${dur(s.rate.period)}`);
  if (s.parallelism) parts.push(`${s.parallelism} in flight`);
  const hdrs = Object.keys(s.headers || {});
  if (hdrs.length) parts.push(`headers: ${hdrs.join(', ')}`);
  return parts.length ? parts.join(' · ') : 'the topic\'s settings';
}

function breaker(s) {
  const b = s.breaker || { state: 'closed' };
  if (!b.failures) return h('span', { class: 'muted', 'data-testid': `sub-breaker-${s.name}`, text: 'off' });
  const open = b.state !== 'closed';
  return h('span', { class: 'stack', 'data-testid': `sub-breaker-${s.name}` },
    h('span', {}, h('span', { class: `state ${open ? 'dead' : 'running'}`, 'data-state': b.state, text: b.state })),
    b.open_until ? h('span', { text: `until ${new Date(b.open_until).toLocaleTimeString()}` }) : '',
    h('span', { class: 'muted', text: `opens after ${b.failures} failures, ${dur(b.cooldown)}` }));
}

function pauseButton(label, what, t, name) {
  return h('button', { type: 'button', 'data-testid': `sub-${what}-${name}`, 'aria-label': `${label} subscription ${name}`, text: label,
    onclick: (e) => pause(e.currentTarget, what, t, name) });
}

// pause pauses or resumes a subscription: paused, its deliveries wait
// (new messages still give it some); resumed, they fire, due ones at once.
async function pause(btn, what, t, name) {
  try {
    await busy(btn, () => call('POST', subscriptionPath(t, name, '/' + what), { query: tenantQuery(t.tenant) }));
    notice(what === 'pause' ? `Subscription ${name} paused: its deliveries wait until you resume it; the topic's other subscriptions go on.` :
      `Subscription ${name} resumed: the deliveries it held fire now.`);
    await subscriptionsView.refresh();
  } catch (e) {
    reportError(e);
  }
}

function remove(t, s) {
  const pending = s.counts.pending;
  return confirmAction({
    title: `Delete subscription ${s.name}?`,
    message: `Subscription ${s.name} of topic ${t.name} goes at once, and its pending deliveries (${num(pending)} now) are cancelled: ` +
      'they will not be sent. Its delivered and dead deliveries stay listed with the topic\'s jobs.',
    ok: 'Delete subscription',
    action: async () => {
      const r = await call('DELETE', subscriptionPath(t, s.name), { query: tenantQuery(t.tenant) });
      notice(`Subscription ${s.name} deleted; its pending deliveries are cancelled` + (r?.operation ? ` (operation ${r.operation}).` : '.'));
      await subscriptionsView.refresh();
    },
  });
}

function go() {
  const t = selectedTopic($('subs-topic'));
  location.hash = link('subscriptions', { tenant: t?.tenant, topic: t?.name });
}
$('subs-topic').addEventListener('change', go);
$('subs-filter').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = cur.topic, id = $('subs-message-id').value.trim();
  if (t && id) location.hash = link('message', { tenant: t.tenant, topic: t.name, id });
});
$('sub-publish').addEventListener('click', () => cur.topic && openPublish(cur.topic));

// ---- add and edit ----

// The form's controls; each has an element "<id>-error" for its field errors.
const ids = ['sub-name', 'sub-signing', 'sub-url', 'sub-event-types', 'sub-filter', 'sub-method', 'sub-timeout', 'sub-attempts',
  'sub-backoff-initial', 'sub-backoff-max', 'sub-parallelism', 'sub-rate-limit', 'sub-rate-period', 'sub-breaker',
  'sub-breaker-cooldown', 'sub-headers', 'sub-description'];

// slot maps an API field to the control it belongs to.
function slot(field) {
  const exact = { 'backoff.max': 'sub-backoff-max', 'rate.period': 'sub-rate-period', 'breaker.cooldown': 'sub-breaker-cooldown' };
  if (exact[field]) return exact[field];
  const head = field.split(/[.[]/)[0];
  const by = { name: 'sub-name', url: 'sub-url', event_types: 'sub-event-types', filter: 'sub-filter', headers: 'sub-headers',
    method: 'sub-method', timeout: 'sub-timeout', max_attempts: 'sub-attempts', backoff: 'sub-backoff-initial',
    rate: 'sub-rate-limit', parallelism: 'sub-parallelism', breaker: 'sub-breaker', signing: 'sub-signing', description: 'sub-description' };
  return by[head] || null;
}

let editing = null; // the subscription being edited, read revealed; null when adding

function fill(s) {
  const v = (id, val) => { $(id).value = val ?? ''; };
  v('sub-name', s?.name);
  v('sub-signing', s?.signing || 'topic');
  v('sub-url', s?.url);
  v('sub-event-types', s?.event_types?.join(', '));
  v('sub-filter', s?.filter ? JSON.stringify(s.filter, null, 2) : '');
  v('sub-method', s?.method || '');
  v('sub-timeout', s?.timeout ? dur(s.timeout, { days: false }) : '');
  v('sub-attempts', s?.max_attempts || '');
  v('sub-backoff-initial', s?.backoff?.initial ? dur(s.backoff.initial, { days: false }) : '');
  v('sub-backoff-max', s?.backoff?.max ? dur(s.backoff.max, { days: false }) : '');
  v('sub-parallelism', s?.parallelism || '');
  v('sub-rate-limit', s?.rate?.limit || '');
  v('sub-rate-period', s?.rate ? dur(s.rate.period, { days: false }) : '');
  v('sub-breaker', s?.breaker?.failures || '');
  v('sub-breaker-cooldown', s?.breaker?.cooldown ? dur(s.breaker.cooldown, { days: false }) : '');
  v('sub-headers', Object.entries(s?.headers || {}).map(([k, val]) => `${k}: ${val}`).join('\n'));
  v('sub-description', s?.description);
}

function openForm(t, s) {
  editing = s;
  fill(s);
  $('sub-dialog-title').textContent = s ? `Edit subscription ${s.name}` : 'Add a subscription';
  $('sub-form-topic').textContent = topicLabel(t);
  $('sub-name').readOnly = !!s;
  showFieldErrors($('sub-error'), ids, slot, null);
  $('sub-dialog').showModal();
  $(s ? 'sub-url' : 'sub-name').focus();
}

// openEdit reads the subscription with its headers and URL revealed: the
// list shows secret values masked, and a mask saved back would replace them.
async function openEdit(btn, t, name) {
  try {
    const s = await busy(btn, () => call('GET', subscriptionPath(t, name), { query: tenantQuery(t.tenant, { reveal: 'headers' }) }));
    openForm(t, s);
  } catch (e) {
    reportError(e);
  }
}

// invalid is a field error found before asking the API, shown as the API's are.
const invalid = (field, message) => new ApiError(0, { title: 'Invalid request', errors: [{ field, message }] });

function parseHeaders(text) {
  const out = {};
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const at = line.indexOf(':');
    if (at < 1) throw invalid('headers', `line ${i + 1} is not "Name: value"`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  });
  return out;
}

// body builds the PUT's body. Every setting is sent (a PUT replaces the
// subscription), except paused: left out, it stays as it is. The filter
// goes in exactly as typed once it parses, so that its numbers keep their
// text.
function body() {
  const str = (id) => $(id).value.trim() || undefined;
  const int = (id) => (str(id) === undefined ? undefined : Number(str(id)));
  const f = {
    url: $('sub-url').value.trim(),
    signing: $('sub-signing').value,
    method: str('sub-method'),
    timeout: str('sub-timeout'),
    max_attempts: int('sub-attempts'),
    parallelism: int('sub-parallelism'),
    headers: parseHeaders($('sub-headers').value),
    description: str('sub-description'),
  };
  const types = $('sub-event-types').value.split(',').map((s) => s.trim()).filter(Boolean);
  if (types.length) f.event_types = types;
  if (str('sub-backoff-initial') || str('sub-backoff-max')) f.backoff = { initial: str('sub-backoff-initial'), max: str('sub-backoff-max') };
  if (str('sub-rate-limit') || str('sub-rate-period')) f.rate = { limit: int('sub-rate-limit'), period: str('sub-rate-period') || '1s' };
  if (str('sub-breaker') || str('sub-breaker-cooldown')) f.breaker = { failures: int('sub-breaker'), cooldown: str('sub-breaker-cooldown') };
  let out = JSON.stringify(f);
  const raw = $('sub-filter').value.trim();
  if (raw) {
    try { JSON.parse(raw); } catch (x) { throw invalid('filter', 'not valid JSON: ' + x.message); }
    out = out.slice(0, -1) + ',"filter":' + raw + '}';
  }
  return out;
}

async function save(e) {
  e.preventDefault();
  const t = cur.topic;
  try {
    const name = editing ? editing.name : $('sub-name').value.trim();
    if (!name) throw invalid('name', 'required: the subscription\'s name in its topic, such as billing');
    const s = await busy($('sub-save'), () => call('PUT', subscriptionPath(t, name), { query: tenantQuery(t.tenant), body: body() }));
    $('sub-dialog').close();
    notice(`Subscription ${s.name} ${editing ? 'saved' : 'added'}.`);
    editing = null;
    await subscriptionsView.refresh();
  } catch (x) {
    showFieldErrors($('sub-error'), ids, slot, x);
  }
}

$('sub-add').addEventListener('click', () => cur.topic && openForm(cur.topic, null));
$('sub-form').addEventListener('submit', save);
$('sub-cancel').addEventListener('click', () => $('sub-dialog').close());
