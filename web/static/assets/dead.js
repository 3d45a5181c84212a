// Dead letters: jobs in state dead, of every topic (GET /v1/dead, the
// default) or of one topic; replay one or all of them
// (POST .../jobs/{id}/retry). The failure and success notifications that
// kairos makes of other jobs (kind notification) are left out unless the
// view is asked for them (#/dead?notifications=1).
import { call, tenantQuery, topicPath, jobPath, listAll } from './api.js';
import { $, h, rows, confirmAction, notice, busy, timeEl, lastAttempt, reportError } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, link, scopeQuery, topicLabel } from './store.js';

// topic is the topic shown, or null for every topic; notifications says
// whether notifications are shown beside the jobs.
const cur = { topic: null, cursor: '', next: '', notifications: false };

// listing is where the view's dead jobs come from: one topic's jobs in
// state dead, or the dead letters across topics (in the admin's tenant
// filter, if any); jobs only (kind=job) unless notifications are shown.
function listing(t) {
  const kind = cur.notifications ? undefined : 'job';
  return t ? { path: topicPath(t, '/jobs'), query: tenantQuery(t.tenant, { state: 'dead', kind }) }
    : { path: '/v1/dead', query: { ...scopeQuery(), kind } };
}

const topicOf = (j) => ({ tenant: j.tenant, name: j.topic });

export const deadView = {
  async show(p) {
    await loadTopics();
    const want = p.get('topic') ? { tenant: p.get('tenant'), name: p.get('topic') } : null;
    const select = $('dead-topic');
    fillTopicSelect(select, want);
    for (const o of [...select.options]) if (!o.value) o.remove(); // "no topics"
    select.prepend(h('option', { value: '', text: 'All topics' }));
    if (!want) select.value = '';
    cur.topic = selectedTopic(select);
    cur.notifications = p.get('notifications') === '1';
    $('dead-notifications').checked = cur.notifications;
    cur.cursor = p.get('cursor') || '';
    $('replay-result').textContent = '';
    await this.refresh();
  },
  async refresh() {
    const t = cur.topic;
    $('replay-all').textContent = t ? 'Replay all of this topic' : 'Replay all';
    const { path, query } = listing(t);
    const page = await call('GET', path, { query: { ...query, cursor: cur.cursor, limit: 25 } });
    cur.next = page.next_cursor || '';
    const jobs = page.jobs || [];
    rows($('dead-table'), jobs, (j) => [
      ['Job', h('span', {},
        h('a', { href: link('job', { tenant: j.tenant, topic: j.topic, id: j.id }), 'data-testid': `dead-link-${j.id}`, text: j.id }),
        j.kind === 'notification' ? h('span', { class: 'kind', 'data-testid': `dead-kind-${j.id}`, text: 'notification' }) : null), 'wrap'],
      ['Topic', h('a', { href: link('dead', { tenant: j.tenant, topic: j.topic }), text: topicLabel(topicOf(j)) }), 'wrap'],
      ['Died at', timeEl(j.done_at)],
      ['Attempts', String(j.attempts), 'num'],
      ['Last attempt', lastAttempt(j), 'wrap'],
      ['Actions', h('div', { class: 'actions' },
        h('a', { class: 'button', href: link('job', { tenant: j.tenant, topic: j.topic, id: j.id }), text: 'Inspect', 'aria-label': `Inspect job ${j.id}` }),
        h('button', { type: 'button', class: 'primary', 'data-testid': `replay-${j.id}`, 'aria-label': `Replay job ${j.id}`, text: 'Replay',
          onclick: (e) => replayOne(e.currentTarget, topicOf(j), j.id) }))],
    ]);
    $('replay-all').disabled = jobs.length === 0 && !cur.cursor;
    $('dead-empty').textContent = (t ? 'No dead jobs in this topic' : 'No dead jobs') +
      (cur.notifications ? '.' : ' (notifications left out).');
    $('dead-empty').hidden = jobs.length > 0;
    $('dead-next').disabled = !cur.next;
    $('dead-first').hidden = !cur.cursor;
    $('dead-next').closest('.pager').hidden = !cur.next && !cur.cursor;
  },
};

async function replayOne(button, t, id) {
  try {
    await busy(button, () => call('POST', jobPath(t, id, '/retry'), { query: tenantQuery(t.tenant) }));
    notice(`Job ${id} replayed: it fires now.`);
    await deadView.refresh();
  } catch (e) {
    reportError(e);
  }
}

// replayAll collects every dead job shown first (replaying moves jobs out
// of the list being paged), then replays each and reports the count.
async function replayAll() {
  const t = cur.topic;
  const what = t ? t.name : 'all topics';
  const res = await confirmAction({
    title: `Replay every dead job of ${what}?`,
    message: 'Each dead job gets a fresh set of attempts and fires now.',
    ok: 'Replay all',
    action: async () => {
      const { path, query } = listing(t);
      const jobs = await listAll(path, query);
      let ok = 0;
      const failed = [];
      for (const j of jobs) {
        try {
          await call('POST', jobPath(topicOf(j), j.id, '/retry'), { query: tenantQuery(j.tenant) });
          ok++;
        } catch (e) {
          failed.push(`${j.id}: ${e.message}`);
        }
      }
      return { ok, total: jobs.length, failed };
    },
  });
  if (!res) return;
  $('replay-result').textContent = `Replayed ${res.ok} of ${res.total} dead job${res.total === 1 ? '' : 's'} of ${what}.` +
    (res.failed.length ? ` Failed: ${res.failed.join('; ')}` : '');
  cur.cursor = '';
  await deadView.refresh();
}

function go(extra = {}) {
  const t = selectedTopic($('dead-topic'));
  location.hash = link('dead', { tenant: t?.tenant, topic: t?.name, notifications: $('dead-notifications').checked ? '1' : '', ...extra });
}
$('dead-topic').addEventListener('change', () => go());
$('dead-notifications').addEventListener('change', () => go());
$('dead-filter').addEventListener('submit', (e) => { e.preventDefault(); go(); });
$('dead-next').addEventListener('click', () => cur.next && go({ cursor: cur.next }));
$('dead-first').addEventListener('click', () => go());
$('replay-all').addEventListener('click', () => replayAll().catch(reportError));
