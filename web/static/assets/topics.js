// Topics: list, register, edit, delete (PUT/DELETE /v1/topics/{topic}).
import { call, session, tenantQuery, topicPath } from './api.js';
import { $, h, rows, showError, confirmAction, notice, busy, reportError, dur, url } from './dom.js';
import { state, loadTopics, link } from './store.js';

let editing = null; // the topic being edited, or null when registering

export async function show() {
  await loadTopics();
  render();
}

function render() {
  rows($('topics-table'), state.topics, (t) => {
    const at = { tenant: t.tenant, topic: t.name };
    const hdrs = Object.keys(t.headers || {});
    return [
      ['Topic', h('span', { class: 'stack' },
        h('a', { href: link('jobs', at), text: t.name, 'data-testid': `topic-${t.name}` }),
        h('span', {}, h('span', { class: `state ${t.paused ? 'paused' : 'running'}`, 'data-state': t.paused ? 'paused' : 'delivering',
          'data-testid': `topic-state-${t.name}`, text: t.paused ? 'paused' : 'delivering' })))],
      ['Tenant', t.tenant, 'admin-only'],
      ['Callback', h('span', { class: 'callback' }, h('code', { text: t.method }), ' ', url(t.callback_url, `topic-url-${t.name}`)), 'cut'],
      ['Defaults', `timeout ${dur(t.timeout)} · ${t.max_attempts} attempts · backoff ${dur(t.backoff.initial)}–${dur(t.backoff.max)} · concurrency ${t.concurrency}` +
        (hdrs.length ? ` · headers: ${hdrs.join(', ')}` : ''), 'wrap'],
      ['Flow control', h('span', { 'data-testid': `topic-flow-${t.name}` }, flow(t),
        t.failure_url ? h('span', { class: 'stack' }, 'dead jobs reported to', url(t.failure_url)) : ''), 'wrap'],
      ['Actions', h('div', { class: 'actions' },
        h('a', { class: 'button', href: link('jobs', at), text: 'Jobs' }),
        h('a', { class: 'button', href: link('schedules', at), 'data-testid': `topic-schedules-${t.name}`, 'aria-label': `Schedules of topic ${t.name}`, text: 'Schedules' }),
        h('a', { class: 'button', href: link('subscriptions', at), 'data-testid': `topic-subscriptions-${t.name}`, 'aria-label': `Subscriptions of topic ${t.name}`, text: 'Subscriptions' }),
        t.paused ? pauseButton('Resume', 'resume', t) : pauseButton('Pause', 'pause', t),
        h('button', { type: 'button', 'data-testid': `topic-edit-${t.name}`, 'aria-label': `Edit topic ${t.name}`, text: 'Edit', onclick: () => open(t) }),
        h('button', { type: 'button', class: 'danger', 'data-testid': `topic-delete-${t.name}`, 'aria-label': `Delete topic ${t.name}`, text: 'Delete', onclick: () => remove(t) }))],
    ];
  });
  $('topics-empty').hidden = state.topics.length > 0;
}

// flow sums up a topic's flow-control limits, enforced across processes.
function flow(t) {
  const parts = [];
  if (t.rate) parts.push(`${t.rate.limit} per ${dur(t.rate.period)}`);
  if (t.parallelism) parts.push(`${t.parallelism} in flight`);
  if (t.flow_key) parts.push(`shared as ${t.flow_key}`);
  if (t.breaker && t.breaker.failures) { // every topic has a breaker; one with no settings never opens
    const b = t.breaker;
    parts.push(`breaker ${b.state}` + (b.open_until ? ` until ${new Date(b.open_until).toLocaleTimeString()}` : '') +
      ` (opens after ${b.failures} failures, ${dur(b.cooldown)})`);
  }
  return parts.length ? parts.join(' · ') : t.failure_url ? '' : 'no limits';
}

// open shows the topic dialog, empty to register or filled to edit. A
// topic to edit is read with its headers revealed: the list shows secret
// values masked, and saving a mask back would be refused.
async function open(t) {
  if (t) {
    try {
      t = await call('GET', topicPath(t), { query: tenantQuery(t.tenant, { reveal: 'headers' }) });
    } catch (e) {
      reportError(e);
      return;
    }
  }
  editing = t || null;
  $('topic-title').textContent = t ? `Edit topic ${t.name}` : 'Register a topic';
  $('topic-tenant-row').hidden = !session.admin;
  $('topic-tenant').value = t ? t.tenant : state.filter;
  $('topic-tenant').placeholder = session.claims.tenant;
  $('topic-tenant').disabled = $('topic-name').disabled = !!t;
  $('topic-name').value = t ? t.name : '';
  $('topic-url').value = t ? t.callback_url || '' : '';
  $('topic-method').value = t ? t.method : 'POST';
  $('topic-timeout').value = t ? dur(t.timeout, { days: false }) : '30s';
  $('topic-attempts').value = t ? t.max_attempts : 10;
  $('topic-backoff-initial').value = t ? dur(t.backoff.initial, { days: false }) : '1s';
  $('topic-backoff-max').value = t ? dur(t.backoff.max, { days: false }) : '1h';
  $('topic-concurrency').value = t ? t.concurrency : 10;
  $('topic-rate-limit').value = t?.rate ? t.rate.limit : '';
  $('topic-rate-period').value = t?.rate ? dur(t.rate.period, { days: false }) : '';
  $('topic-parallelism').value = t?.parallelism || '';
  $('topic-flow-key').value = t?.flow_key || '';
  $('topic-failure-url').value = t?.failure_url || '';
  $('topic-breaker').value = t?.breaker?.failures || '';
  $('topic-breaker-cooldown').value = t?.breaker?.cooldown ? dur(t.breaker.cooldown) : '';
  $('topic-headers').value = Object.entries(t?.headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
  showError($('topic-error'), null);
  $('topic-dialog').showModal();
  (t ? $('topic-url') : session.admin ? $('topic-tenant') : $('topic-name')).focus();
}

function parseHeaders(text) {
  const out = {};
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const at = line.indexOf(':');
    if (at < 1) throw new Error(`headers: line ${i + 1} is not "Name: value"`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  });
  return out;
}

async function save(e) {
  e.preventDefault();
  const err = $('topic-error');
  try {
    const int = (id) => ($(id).value.trim() === '' ? undefined : Number($(id).value));
    const str = (id) => $(id).value.trim() || undefined;
    const body = {
      callback_url: $('topic-url').value.trim(),
      method: $('topic-method').value,
      timeout: str('topic-timeout'),
      max_attempts: int('topic-attempts'),
      backoff: { initial: str('topic-backoff-initial'), max: str('topic-backoff-max') },
      concurrency: int('topic-concurrency'),
      headers: parseHeaders($('topic-headers').value),
      parallelism: int('topic-parallelism'),
      flow_key: str('topic-flow-key'),
      failure_url: str('topic-failure-url'),
    };
    if (str('topic-breaker') || str('topic-breaker-cooldown')) {
      body.breaker = { failures: int('topic-breaker'), cooldown: str('topic-breaker-cooldown') };
    }
    if (str('topic-rate-limit') || str('topic-rate-period')) {
      body.rate = { limit: int('topic-rate-limit'), period: str('topic-rate-period') || '1s' };
    }
    const name = editing ? editing.name : $('topic-name').value.trim();
    if (!name) throw new Error('name: required');
    const tenant = editing ? editing.tenant : $('topic-tenant').value.trim();
    const t = await busy($('topic-save'), () => call('PUT', topicPath({ name }), { query: tenantQuery(tenant), body }));
    $('topic-dialog').close();
    notice(`Topic ${t.name} ${editing ? 'saved' : 'registered'}.`);
    await show();
  } catch (x) {
    showError(err, x);
  }
}

function pauseButton(label, what, t) {
  return h('button', { type: 'button', 'data-testid': `topic-${what}-${t.name}`, 'aria-label': `${label} topic ${t.name}`, text: label,
    onclick: (e) => pause(e.currentTarget, what, t) });
}

// pause pauses or resumes a topic: paused, its due jobs wait with their
// due times and attempts; resumed, they fire, oldest due first.
async function pause(btn, what, t) {
  try {
    await busy(btn, () => call('POST', topicPath(t, '/' + what), { query: tenantQuery(t.tenant) }));
    notice(what === 'pause' ? `Topic ${t.name} paused: its due jobs wait until you resume it.` :
      `Topic ${t.name} resumed: the jobs it held fire now, oldest due first.`);
    await show();
  } catch (e) {
    reportError(e);
  }
}

function remove(t) {
  return confirmAction({
    title: `Delete topic ${t.name}?`,
    message: `This removes the topic ${t.name}${session.admin ? ` of tenant ${t.tenant}` : ''} and its counters. ` +
      'A topic that still holds pending or dead jobs cannot be deleted: cancel or replay them first.',
    ok: 'Delete topic',
    action: async () => {
      await call('DELETE', topicPath(t), { query: tenantQuery(t.tenant) });
      notice(`Topic ${t.name} deleted.`);
      await show();
    },
  });
}

$('topic-add').addEventListener('click', () => open(null));
$('topic-form').addEventListener('submit', save);
$('topic-cancel').addEventListener('click', () => $('topic-dialog').close());
