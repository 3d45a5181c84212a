// Schedules of a topic (GET /v1/topics/{topic}/schedules, paged): each
// one's pattern, its next runs in the viewer's zone and in the schedule's
// own, its last occurrence and how that went; pause, resume, trigger and
// delete. A schedule picked by its id shows its settings above the list
// (GET .../schedules/{id}).
import { call, session, tenantQuery, topicPath, schedulePath } from './api.js';
import { $, h, rows, confirmAction, notice, busy, timeEl, zoned, viewerZone, relative, stateBadge, lastAttempt,
  reportError } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, link } from './store.js';

// id is the schedule whose settings are shown, if any.
const cur = { topic: null, id: '', cursor: '', next: '' };

export const schedulesView = {
  async show(p) {
    await loadTopics();
    cur.topic = fillTopicSelect($('schedules-topic'), { tenant: p.get('tenant'), name: p.get('topic') });
    cur.id = p.get('id') || '';
    cur.cursor = p.get('cursor') || '';
    await this.refresh();
  },
  async refresh() {
    const t = cur.topic;
    $('schedules-title').textContent = t ? `Schedules of ${t.name}` : 'Schedules';
    $('viewer-zone').textContent = viewerZone();
    if (!t) {
      rows($('schedules-table'), [], () => []);
      $('schedules-empty').hidden = false;
      $('schedule-card').hidden = true;
      pager();
      return;
    }
    const q = tenantQuery(t.tenant);
    const [page, one] = await Promise.all([
      call('GET', topicPath(t, '/schedules'), { query: { ...q, cursor: cur.cursor, limit: 25 } }),
      cur.id ? call('GET', schedulePath(t, cur.id), { query: q }).catch((e) => { if (e.status === 404) return null; throw e; }) : null,
    ]);
    cur.next = page.next_cursor || '';
    const list = page.schedules || [];
    rows($('schedules-table'), list, (s) => row(t, s));
    $('schedules-empty').hidden = list.length > 0;
    detail(t, one);
    pager();
  },
};

function pager() {
  $('schedules-next').disabled = !cur.next;
  $('schedules-first').hidden = !cur.cursor;
  $('schedules-next').closest('.pager').hidden = !cur.next && !cur.cursor;
}

// status is what a schedule is doing: paused, running, or ended (its
// end_at passed, or a pattern with no instant left).
const status = (s) => (s.paused ? 'paused' : s.next_runs?.length ? 'running' : 'ended');

function row(t, s) {
  const at = { tenant: t.tenant, topic: t.name, cursor: cur.cursor };
  const st = status(s);
  return [
    ['Schedule', h('span', { class: 'stack' },
      h('a', { href: link('schedules', { ...at, id: s.id }), 'data-testid': `schedule-${s.id}`, text: s.id }),
      h('span', {}, h('span', { class: `state ${st}`, 'data-state': st, 'data-testid': `schedule-state-${s.id}`, text: st }))), 'wrap'],
    ['Pattern', pattern(s)],
    ['Next runs, your time', runs(s, '', `schedule-next-local-${s.id}`), 'wrap'],
    ["Next runs, schedule's zone", runs(s, s.timezone, `schedule-next-zone-${s.id}`), 'wrap'],
    ['Last run', lastRun(t, s), 'wrap'],
    ['Actions', h('div', { class: 'actions column' },
      s.paused ? button('Resume', 'resume', t, s.id) : button('Pause', 'pause', t, s.id),
      button('Trigger', 'trigger', t, s.id),
      h('button', { type: 'button', class: 'danger', 'data-testid': `schedule-delete-${s.id}`, 'aria-label': `Delete schedule ${s.id}`,
        text: 'Delete', onclick: () => remove(t, s.id) }))],
  ];
}

function pattern(s) {
  return h('span', { class: 'stack' },
    h('span', {}, s.cron ? 'cron ' : 'every ', h('code', { text: s.cron || s.every })),
    h('span', { class: 'muted', 'data-testid': `schedule-zone-${s.id}`, text: s.timezone }));
}

// runs lists the next fire instants in the zone tz ('' for the viewer's).
function runs(s, tz, testid) {
  if (!s.next_runs?.length) {
    return h('span', { class: 'muted', 'data-testid': testid, text: s.paused ? 'none while paused' : 'none: the schedule has ended' });
  }
  return h('ol', { class: 'runs', 'data-testid': testid }, s.next_runs.map((r, i) =>
    h('li', {}, h('time', { datetime: r, title: r, text: zoned(r, tz) + (i === 0 && !tz ? relative(r) : '') }))));
}

function lastRun(t, s) {
  const r = s.last_run;
  if (!r) return h('span', { class: 'muted', 'data-testid': `schedule-last-${s.id}`, text: 'not yet' });
  return h('span', { class: 'stack', 'data-testid': `schedule-last-${s.id}` },
    h('span', {}, r.state ? stateBadge(r.state) : h('span', { class: 'muted', text: 'job gone (past retention)' })),
    timeEl(r.at),
    r.trigger && r.trigger !== 'pattern' ? h('span', { class: 'muted', 'data-testid': `schedule-last-trigger-${s.id}`, text: `fired by ${r.trigger === 'manual' ? 'a manual trigger' : 'a backfill'}` }) : '',
    h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: r.job_id }), text: r.job_id }),
    r.last_attempt ? lastAttempt(r) : '');
}

function button(label, what, t, id) {
  return h('button', { type: 'button', 'data-testid': `schedule-${what}-${id}`, 'aria-label': `${label} schedule ${id}`, text: label,
    onclick: (e) => act(e.currentTarget, what, t, id) });
}

async function act(btn, what, t, id) {
  try {
    const r = await busy(btn, () => call('POST', schedulePath(t, id, '/' + what), { query: tenantQuery(t.tenant) }));
    notice(what === 'trigger' ? `Schedule ${id} triggered: occurrence ${r.id} fires now.` : `Schedule ${id} ${what}d.`);
    await schedulesView.refresh();
  } catch (e) {
    reportError(e);
  }
}

function remove(t, id) {
  return confirmAction({
    title: `Delete schedule ${id}?`,
    message: `Schedule ${id} stops: its pending occurrence is removed and no later one fires. ` +
      'An occurrence being delivered right now finishes; past occurrences stay listed with the topic\'s jobs.',
    ok: 'Delete schedule',
    action: async () => {
      await call('DELETE', schedulePath(t, id), { query: tenantQuery(t.tenant) });
      notice(`Schedule ${id} deleted.`);
      if (cur.id === id) location.hash = link('schedules', { tenant: t.tenant, topic: t.name, cursor: cur.cursor });
      else await schedulesView.refresh();
    },
  });
}

// detail shows one schedule's settings, or hides the card (none picked,
// or the picked one is gone).
function detail(t, s) {
  $('schedule-card').hidden = !s;
  if (!s) return;
  $('schedule-id').textContent = s.id;
  $('schedule-close').href = link('schedules', { tenant: t.tenant, topic: t.name, cursor: cur.cursor });
  const hdrs = Object.entries(s.headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
  const pairs = [
    ...(session.admin ? [['Tenant', s.tenant]] : []),
    ['Pattern', s.cron ? `cron ${s.cron}` : `every ${s.every}`],
    ['Time zone', s.timezone],
    ['Catch-up', s.catch_up],
    ['Starts', s.start_at ? timeEl(s.start_at) : 'at once'],
    ['Ends', s.end_at ? timeEl(s.end_at) : 'never'],
    ['Pending occurrence', s.pending_job ? h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: s.pending_job }), text: s.pending_job }) : 'none'],
    ['Callback', s.callback_url || `${t.callback_url} (topic default)`],
    ['Method', s.method || `${t.method} (topic default)`],
    ['Timeout', s.timeout || `${t.timeout} (topic default)`],
    ['Max attempts', String(s.max_attempts || `${t.max_attempts} (topic default)`)],
    ['Headers', hdrs ? h('pre', { text: hdrs }) : 'none of its own'],
    ['Created', timeEl(s.created_at)],
    ['Updated', timeEl(s.updated_at)],
  ];
  $('schedule-kv').replaceChildren(...pairs.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', {}, v ?? '—')]));
  $('schedule-payload').textContent = s.payload === undefined || s.payload === null ? '(empty body)' : JSON.stringify(s.payload, null, 2);
}

function go(extra = {}) {
  const t = selectedTopic($('schedules-topic'));
  location.hash = link('schedules', { tenant: t?.tenant, topic: t?.name, ...extra });
}
$('schedules-topic').addEventListener('change', () => go());
$('schedules-filter').addEventListener('submit', (e) => { e.preventDefault(); go(); });
$('schedules-next').addEventListener('click', () => cur.next && go({ cursor: cur.next }));
$('schedules-first').addEventListener('click', () => go());
