// Dead letters: jobs of a topic in state dead; replay one or all of them
// (POST .../jobs/{id}/retry).
import { call, tenantQuery, topicPath, jobPath, listAll } from './api.js';
import { $, h, rows, confirmAction, notice, busy, timeEl, lastAttempt, reportError } from './dom.js';
import { state, loadTopics, fillTopicSelect, selectedTopic, link } from './store.js';

const cur = { topic: null, cursor: '', next: '' };

export const deadView = {
  async show(p) {
    await loadTopics();
    let want = p.get('topic') ? { tenant: p.get('tenant'), name: p.get('topic') } : null;
    if (!want) { // the first topic holding dead jobs, by the last stats seen
      const s = (state.stats?.topics || []).find((t) => t.counts?.dead > 0);
      if (s) want = { tenant: s.tenant, name: s.topic };
    }
    cur.topic = fillTopicSelect($('dead-topic'), want);
    cur.cursor = p.get('cursor') || '';
    $('replay-result').textContent = '';
    await this.refresh();
  },
  async refresh() {
    const t = cur.topic;
    $('replay-all').disabled = !t;
    if (!t) { rows($('dead-table'), [], () => []); $('dead-empty').hidden = false; return; }
    const page = await call('GET', topicPath(t, '/jobs'), { query: tenantQuery(t.tenant, { state: 'dead', cursor: cur.cursor, limit: 25 }) });
    cur.next = page.next_cursor || '';
    const jobs = page.jobs || [];
    rows($('dead-table'), jobs, (j) => [
      ['Job', h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: j.id }), 'data-testid': `dead-link-${j.id}`, text: j.id }), 'wrap'],
      ['Died at', timeEl(j.done_at)],
      ['Attempts', String(j.attempts), 'num'],
      ['Last attempt', lastAttempt(j), 'wrap'],
      ['Actions', h('div', { class: 'actions' },
        h('a', { class: 'button', href: link('job', { tenant: t.tenant, topic: t.name, id: j.id }), text: 'Inspect', 'aria-label': `Inspect job ${j.id}` }),
        h('button', { type: 'button', class: 'primary', 'data-testid': `replay-${j.id}`, 'aria-label': `Replay job ${j.id}`, text: 'Replay',
          onclick: (e) => replayOne(e.currentTarget, t, j.id) }))],
    ]);
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

// replayAll collects every dead job of the topic first (replaying moves jobs
// out of the list being paged), then replays each and reports the count.
async function replayAll() {
  const t = cur.topic;
  if (!t) return;
  const res = await confirmAction({
    title: `Replay every dead job of ${t.name}?`,
    message: 'Each dead job gets a fresh set of attempts and fires now.',
    ok: 'Replay all',
    action: async () => {
      const jobs = await listAll(topicPath(t, '/jobs'), tenantQuery(t.tenant, { state: 'dead' }));
      let ok = 0;
      const failed = [];
      for (const j of jobs) {
        try {
          await call('POST', jobPath(t, j.id, '/retry'), { query: tenantQuery(t.tenant) });
          ok++;
        } catch (e) {
          failed.push(`${j.id}: ${e.message}`);
        }
      }
      return { ok, total: jobs.length, failed };
    },
  });
  if (!res) return;
  $('replay-result').textContent = `Replayed ${res.ok} of ${res.total} dead job${res.total === 1 ? '' : 's'} of ${t.name}.` +
    (res.failed.length ? ` Failed: ${res.failed.join('; ')}` : '');
  cur.cursor = '';
  await deadView.refresh();
}

function go(extra = {}) {
  const t = selectedTopic($('dead-topic'));
  location.hash = link('dead', { tenant: t?.tenant, topic: t?.name, ...extra });
}
$('dead-topic').addEventListener('change', () => go());
$('dead-filter').addEventListener('submit', (e) => { e.preventDefault(); go(); });
$('dead-next').addEventListener('click', () => cur.next && go({ cursor: cur.next }));
$('dead-first').addEventListener('click', () => go());
$('replay-all').addEventListener('click', () => replayAll().catch(reportError));
