// Schedules of a topic (GET /v1/topics/{topic}/schedules, paged): each
// one's pattern, its next runs in the viewer's zone and in the schedule's
// own, its last occurrence and how that went; pause, resume, trigger and
// delete. A schedule picked by its id shows its settings above the list
// (GET .../schedules/{id}).
import { call, session, tenantQuery, topicPath, schedulePath } from './api.js';
import { $, h, rows, confirmAction, notice, busy, timeEl, zoned, viewerZone, relative, stateBadge, lastAttempt,
  reportError, showError, dur, url, span, toLocalInput, fromLocalInput } from './dom.js';
import { loadTopics, fillTopicSelect, selectedTopic, link, topicWithData } from './store.js';

// id is the schedule whose settings are shown, if any.
const cur = { topic: null, id: '', cursor: '', next: '' };

export const schedulesView = {
  async show(p) {
    await loadTopics();
    // No topic asked for: the first one that has schedules.
    const want = p.get('topic') ? { tenant: p.get('tenant'), name: p.get('topic') } : await topicWithData('/schedules');
    cur.topic = fillTopicSelect($('schedules-topic'), want);
    cur.id = p.get('id') || '';
    cur.cursor = p.get('cursor') || '';
    await this.refresh();
  },
  async refresh() {
    const t = cur.topic;
    $('schedules-title').textContent = t ? `Schedules of ${t.name}` : 'Schedules';
    $('viewer-zone').textContent = viewerZone();
    $('schedule-add').disabled = !t;
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

// status is what a schedule is doing: completed (its max_runs fired),
// paused, running, or ended (its end_at passed, or a pattern with no
// instant left).
const status = (s) => (s.state === 'completed' ? 'completed' : s.paused ? 'paused' : s.next_runs?.length ? 'running' : 'ended');

function row(t, s) {
  const at = { tenant: t.tenant, topic: t.name, cursor: cur.cursor };
  const st = status(s);
  return [
    ['Schedule', h('span', { class: 'stack' },
      h('a', { href: link('schedules', { ...at, id: s.id }), 'data-testid': `schedule-${s.id}`, text: s.id }),
      h('span', {}, h('span', { class: `state ${st}`, 'data-state': st, 'data-testid': `schedule-state-${s.id}`, text: st }))), 'wrap'],
    ['Pattern', h('span', { class: 'stack' }, pattern(s), rules(s))],
    ['Next runs, your time', runs(s, '', `schedule-next-local-${s.id}`), 'wrap'],
    ["Next runs, schedule's zone", runs(s, s.timezone, `schedule-next-zone-${s.id}`), 'wrap'],
    ['Last run', lastRun(t, s), 'wrap'],
    ['Actions', h('div', { class: 'actions column' },
      s.paused ? button('Resume', 'resume', t, s.id) : button('Pause', 'pause', t, s.id),
      // a completed schedule answers a trigger with 409: nothing more fires
      st === 'completed' ? '' : button('Trigger', 'trigger', t, s.id),
      h('button', { type: 'button', class: 'danger', 'data-testid': `schedule-delete-${s.id}`, 'aria-label': `Delete schedule ${s.id}`,
        text: 'Delete', onclick: () => remove(t, s.id) }))],
  ];
}

function pattern(s) {
  return h('span', { class: 'stack' },
    h('span', {}, s.cron ? 'cron ' : 'every ', h('code', { text: s.cron || dur(s.every) })),
    h('span', { class: 'muted', 'data-testid': `schedule-zone-${s.id}`, text: s.timezone }));
}

// rules sums up what overlap, jitter and max_runs do to the schedule, and
// what they counted (runs and skipped are counted when max_runs or an
// overlap rule is set); nothing for a schedule that sets none.
function rules(s) {
  const parts = [];
  if (s.overlap && s.overlap !== 'allow') parts.push(`overlap ${s.overlap}`);
  if (s.jitter) parts.push(`jitter ${dur(s.jitter)}`);
  if (s.max_runs) parts.push(`runs ${s.runs ?? 0} of ${s.max_runs}`);
  else if (s.runs !== undefined) parts.push(`runs ${s.runs}`);
  if (s.skipped) parts.push(`skipped ${s.skipped}`);
  return parts.length ? h('span', { class: 'muted', 'data-testid': `schedule-rules-${s.id}`, text: parts.join(' · ') }) : '';
}

// runs lists the next fire instants in the zone tz ('' for the viewer's).
// In the schedule's zone each is named as the API names it
// (next_runs_zone: Go's abbreviations, CET rather than the browser's
// GMT+1), the way the CLI prints it.
function runs(s, tz, testid) {
  if (!s.next_runs?.length) {
    const why = s.state === 'completed' ? `none: completed after ${s.max_runs} runs` : s.paused ? 'none while paused' : 'none: the schedule has ended';
    return h('span', { class: 'muted', 'data-testid': testid, text: why });
  }
  return h('ol', { class: 'runs', 'data-testid': testid }, s.next_runs.map((r, i) =>
    h('li', {}, h('time', { datetime: r, title: r, text: zoned(r, tz, tz ? s.next_runs_zone?.[i] : '') + (i === 0 && !tz ? relative(r) : '') }))));
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
  cur.shown = s;
  if (!s) return;
  if (cur.backfillFor !== s.id) backfillReset(s.id);
  $('schedule-id').textContent = s.id;
  $('schedule-close').href = link('schedules', { tenant: t.tenant, topic: t.name, cursor: cur.cursor });
  const hdrs = Object.entries(s.headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
  const pairs = [
    ...(session.admin ? [['Tenant', s.tenant]] : []),
    ['Pattern', s.cron ? `cron ${s.cron}` : `every ${dur(s.every)}`],
    ['Time zone', s.timezone],
    ['State', h('span', { class: `state ${status(s)}`, 'data-state': status(s), text: status(s) }), 'schedule-detail-state'],
    ['Catch-up', s.catch_up],
    ['Overlap', s.overlap || 'allow', 'schedule-detail-overlap'],
    ['Jitter', s.jitter ? dur(s.jitter) : 'none', 'schedule-detail-jitter'],
    ['Max runs', s.max_runs ? String(s.max_runs) : 'no bound', 'schedule-detail-max-runs'],
    ['Runs', s.runs !== undefined ? String(s.runs) : 'not counted (no max runs or overlap rule)', 'schedule-detail-runs'],
    ['Skipped', s.skipped !== undefined ? String(s.skipped) : 'not counted (overlap allow)', 'schedule-detail-skipped'],
    ['Starts', s.start_at ? timeEl(s.start_at) : 'at once'],
    ['Ends', s.end_at ? timeEl(s.end_at) : 'never'],
    ['Pending occurrence', s.pending_job ? h('a', { href: link('job', { tenant: t.tenant, topic: t.name, id: s.pending_job }), text: s.pending_job }) : 'none'],
    ['Callback', s.callback_url ? url(s.callback_url) : span(url(t.callback_url), ' (topic default)')],
    ['Method', s.method || `${t.method} (topic default)`],
    ['Timeout', s.timeout ? dur(s.timeout) : `${dur(t.timeout)} (topic default)`],
    ['Max attempts', String(s.max_attempts || `${t.max_attempts} (topic default)`)],
    ['Headers', hdrs ? h('pre', { text: hdrs }) : 'none of its own'],
    ['Created', timeEl(s.created_at)],
    ['Updated', timeEl(s.updated_at)],
  ];
  $('schedule-kv').replaceChildren(...pairs.flatMap(([k, v, testid]) => [h('dt', { text: k }), h('dd', { 'data-testid': testid }, v ?? '—')]));
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

// ---- create ----

// The schedule dialog: PUT .../schedules/{id} with a cron or an every, a
// time zone, a payload, optionally a callback URL, and the overlap rule,
// jitter and max runs. The API's field errors are shown in the dialog,
// which stays open.
//
// Opened by Edit, it is filled from the schedule read with its headers
// revealed (editing): a PUT replaces the whole schedule, so what the form
// does not show (headers, method, timeout, start and end, catch-up ...) is
// sent back as the API answered it.
let editing = null;

const formDefaults = { cron: '', every: '', timezone: 'UTC', payload: '{}', url: '', overlap: 'allow', jitter: '', 'max-runs': '' };

function fillForm(v) {
  for (const [k, val] of Object.entries(v)) $('schedule-form-' + k).value = val;
  $('schedule-form-kind-cron').checked = !v.every;
  $('schedule-form-kind-every').checked = !!v.every;
  kindChanged();
}

function openForm() {
  const t = cur.topic;
  if (!t) return;
  if (editing) { // a new schedule after an edit starts blank
    editing = null;
    fillForm(formDefaults);
  }
  $('schedule-dialog-title').textContent = 'New schedule';
  $('schedule-form-id').readOnly = false;
  showForm(t);
}

async function openEdit(e) {
  const t = cur.topic, id = cur.shown?.id;
  if (!t || !id) return;
  try {
    const s = await busy(e.currentTarget, () => call('GET', schedulePath(t, id), { query: tenantQuery(t.tenant, { reveal: 'headers' }) }));
    editing = s;
    $('schedule-form-id').value = s.id;
    $('schedule-form-id').readOnly = true;
    fillForm({ cron: s.cron || '', every: s.every ? dur(s.every, { days: false }) : '', timezone: s.timezone || 'UTC',
      payload: s.payload === undefined || s.payload === null ? '' : JSON.stringify(s.payload, null, 2), url: s.callback_url || '',
      overlap: s.overlap || 'allow', jitter: s.jitter || '', 'max-runs': s.max_runs ? String(s.max_runs) : '' });
    $('schedule-dialog-title').textContent = `Edit schedule ${s.id}`;
    showForm(t);
  } catch (x) {
    reportError(x);
  }
}

// kept are the fields of a schedule answer that an edit sends back as they are.
const kept = ['start_at', 'end_at', 'catch_up', 'paused', 'method', 'max_attempts', 'timeout', 'backoff', 'headers', 'labels'];

function showForm(t) {
  $('schedule-form-topic').textContent = session.admin ? `${t.tenant} / ${t.name}` : t.name;
  showError($('schedule-form-error'), null);
  if (!$('schedule-zones').options.length && Intl.supportedValuesOf) {
    $('schedule-zones').replaceChildren(...['UTC', ...Intl.supportedValuesOf('timeZone')].map((z) => h('option', { value: z })));
  }
  $('schedule-dialog').showModal();
  // an edit keeps the id: start at the pattern
  $(editing ? ($('schedule-form-kind-cron').checked ? 'schedule-form-cron' : 'schedule-form-every') : 'schedule-form-id').focus();
}

function kindChanged() {
  const cron = $('schedule-form-kind-cron').checked;
  $('schedule-form-cron-row').hidden = !cron;
  $('schedule-form-every-row').hidden = cron;
}

async function saveForm(e) {
  e.preventDefault();
  const err = $('schedule-form-error');
  showError(err, null);
  const t = cur.topic;
  try {
    const id = $('schedule-form-id').value.trim();
    if (!id) throw new Error('id: required: the schedule\'s name in its topic, such as daily-report');
    const fields = {};
    if (editing && editing.id === id) {
      for (const k of kept) if (editing[k] !== undefined && editing[k] !== null && editing[k] !== '') fields[k] = editing[k];
    }
    fields.timezone = $('schedule-form-timezone').value.trim() || 'UTC';
    if ($('schedule-form-kind-cron').checked) fields.cron = $('schedule-form-cron').value.trim();
    else fields.every = $('schedule-form-every').value.trim();
    const cb = $('schedule-form-url').value.trim();
    if (cb) fields.callback_url = cb;
    fields.overlap = $('schedule-form-overlap').value;
    const jitter = $('schedule-form-jitter').value.trim();
    if (jitter) fields.jitter = jitter;
    const maxRuns = $('schedule-form-max-runs').value.trim();
    if (maxRuns) {
      if (!/^[0-9]+$/.test(maxRuns)) throw new Error(`max_runs: "${maxRuns}" is not a whole number: allowed 1 to 1000000000, or empty for no bound`);
      fields.max_runs = Number(maxRuns);
    }
    // The payload goes into the body exactly as typed, once it parses.
    const raw = $('schedule-form-payload').value.trim();
    if (raw) {
      try { JSON.parse(raw); } catch (x) { throw new Error('payload: not valid JSON: ' + x.message); }
    }
    let body = JSON.stringify(fields);
    if (raw) body = body.slice(0, -1) + ',"payload":' + raw + '}';
    const s = await busy($('schedule-form-save'), () => call('PUT', schedulePath(t, id), { query: tenantQuery(t.tenant), body }));
    $('schedule-dialog').close();
    notice(`Schedule ${s.id} ${s.result === 'created' ? 'created' : 'saved'}` + (s.next_runs?.length ? `: it fires next at ${zoned(s.next_runs[0], '')}.` : '.'));
    $('schedule-form-id').value = '';
    if (editing) {
      editing = null;
      fillForm(formDefaults);
    }
    location.hash = link('schedules', { tenant: t.tenant, topic: t.name, id: s.id });
    await schedulesView.refresh(); // the same hash (an edit) loads nothing
  } catch (x) {
    showError(err, x);
  }
}

$('schedule-add').addEventListener('click', openForm);
$('schedule-edit').addEventListener('click', openEdit);
$('schedule-form-kind-cron').addEventListener('change', kindChanged);
$('schedule-form-kind-every').addEventListener('change', kindChanged);
$('schedule-form').addEventListener('submit', saveForm);
$('schedule-form-cancel').addEventListener('click', () => $('schedule-dialog').close());

// ---- backfill ----

// backfillReset empties the backfill form for schedule id, proposing the
// last day up to now.
function backfillReset(id) {
  cur.backfillFor = id;
  const now = new Date();
  $('schedule-backfill-from').value = toLocalInput(new Date(now - 86400e3));
  $('schedule-backfill-to').value = toLocalInput(now);
  $('schedule-backfill-result').textContent = '';
  showError($('schedule-backfill-error'), null);
}

// backfill posts the range; the answer's instant count, or the problem,
// is shown under the form.
async function backfill(e) {
  e.preventDefault();
  const t = cur.topic, id = cur.shown?.id;
  const err = $('schedule-backfill-error');
  showError(err, null);
  $('schedule-backfill-result').textContent = '';
  if (!t || !id) return;
  try {
    const bound = (name) => {
      try { return fromLocalInput($('schedule-backfill-' + name).value); } catch (x) { throw new Error(`${name}: ${x.message}`); }
    };
    const body = { from: bound('from'), to: bound('to') };
    const r = await busy($('schedule-backfill'), () => call('POST', schedulePath(t, id, '/backfill'), { query: tenantQuery(t.tenant), body }));
    $('schedule-backfill-result').textContent = r.instants === 0
      ? 'Backfill fired no instant: each one in the range fired already, or is the pattern\'s to fire.'
      : `Backfill fired ${r.instants} ${r.instants === 1 ? 'instant' : 'instants'}.`;
    await schedulesView.refresh();
  } catch (x) {
    showError(err, x);
  }
}
$('schedule-backfill-form').addEventListener('submit', backfill);
