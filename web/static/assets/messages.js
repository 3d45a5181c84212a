// One message of a topic (GET /v1/topics/{topic}/messages/{id}): its
// deliveries, each with its subscription, its job (linked to the job's
// page) and the job's state; and publishing a message from the page
// (POST /v1/topics/{topic}/messages), which opens the message.
import { call, session, tenantQuery, topicPath, messagePath } from './api.js';
import { $, h, rows, showError, busy, timeEl, stateBadge, lastAttempt, notice, span } from './dom.js';
import { link, topicLabel } from './store.js';

const cur = { tenant: '', topic: '', id: '' };
const topicOf = () => ({ tenant: cur.tenant, name: cur.topic });

export const messageView = {
  async show(p) {
    Object.assign(cur, { tenant: p.get('tenant') || '', topic: p.get('topic') || '', id: p.get('id') || '' });
    $('message-id').textContent = cur.id;
    $('message-back').href = link('subscriptions', { tenant: cur.tenant, topic: cur.topic });
    $('message-back').textContent = `← Subscriptions of ${cur.topic}`;
    await this.refresh();
  },
  async refresh() {
    let m;
    try {
      m = await call('GET', messagePath(topicOf(), cur.id), { query: tenantQuery(cur.tenant) });
    } catch (e) {
      // Gone (past retention), never published, or another tenant's: the
      // API's 404 in the view, in place of the message.
      if (e.status !== 404) throw e;
      showError($('message-missing'), e);
      $('message-body').hidden = true;
      return;
    }
    showError($('message-missing'), null);
    $('message-body').hidden = false;
    render(m);
  },
};

function render(m) {
  const at = { tenant: m.tenant, topic: m.topic };
  rows($('message-deliveries'), m.deliveries, (d) => [
    ['Subscription', h('a', { href: link('subscriptions', at), 'data-testid': `delivery-sub-${d.subscription}`, text: d.subscription })],
    ['Job', h('a', { href: link('job', { ...at, id: d.job_id }), class: 'nowrap', 'data-testid': `delivery-job-${d.subscription}`, text: d.job_id })],
    ['State', d.state ? h('span', { 'data-testid': `delivery-state-${d.subscription}` }, stateBadge(d.state))
      : h('span', { class: 'muted', 'data-testid': `delivery-state-${d.subscription}`, text: 'job gone (past retention)' })],
    ['Attempts', String(d.attempts), 'num'],
    ['Next run / done', d.done_at ? span('done ', timeEl(d.done_at)) : d.next_run_at ? span('next ', timeEl(d.next_run_at)) : '—'],
    ['Last attempt', lastAttempt(d), 'wrap'],
  ]);
  $('message-nodeliveries').hidden = m.deliveries.length > 0;
  const labels = Object.entries(m.labels || {}).map(([k, v]) => `${k}=${v}`).join(', ');
  $('message-kv').replaceChildren(...[
    ...(session.admin ? [['Tenant', m.tenant]] : []),
    ['Topic', h('a', { href: link('subscriptions', at), text: m.topic })],
    ['Event type', m.event_type || h('span', { class: 'muted', text: 'none' }), 'message-event-type'],
    ['Run at', timeEl(m.run_at)],
    ['Published', timeEl(m.created_at)],
    ['Labels', labels || h('span', { class: 'muted', text: 'none' })],
  ].flatMap(([k, v, testid]) => [h('dt', { text: k }), h('dd', { 'data-testid': testid || null }, v)]));
  $('message-payload').textContent = m.payload === undefined || m.payload === null ? '(empty body)' : JSON.stringify(m.payload, null, 2);
}

// ---- publish ----

let target = null; // the topic the publish dialog publishes to

export function openPublish(t) {
  target = t;
  $('publish-topic').textContent = topicLabel(t);
  showError($('publish-error'), null);
  $('publish-dialog').showModal();
  $('publish-event-type').focus();
}

async function publish(e) {
  e.preventDefault();
  const t = target;
  try {
    const raw = $('publish-payload').value.trim();
    if (raw) {
      try { JSON.parse(raw); } catch (x) { throw new Error('payload: not valid JSON: ' + x.message); }
    }
    const f = {};
    const et = $('publish-event-type').value.trim(), delay = $('publish-delay').value.trim();
    if (et) f.event_type = et;
    if (delay) f.delay = delay;
    let body = JSON.stringify(f);
    if (raw) body = body.slice(0, -1) + (body.length > 2 ? ',' : '') + '"payload":' + raw + '}';
    const r = await busy($('publish-save'), () => call('POST', topicPath(t, '/messages'), { query: tenantQuery(t.tenant), body }));
    $('publish-dialog').close();
    const n = r.deliveries.length;
    notice(`Message ${r.id} published: ${n ? `${n} ${n === 1 ? 'delivery' : 'deliveries'}` : 'no subscription matched it'}.`);
    location.hash = link('message', { tenant: t.tenant, topic: t.name, id: r.id });
  } catch (x) {
    showError($('publish-error'), x);
  }
}

$('publish-form').addEventListener('submit', publish);
$('publish-cancel').addEventListener('click', () => $('publish-dialog').close());
