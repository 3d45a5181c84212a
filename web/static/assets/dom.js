// Small DOM helpers: building elements (text only, never HTML strings),
// showing API errors, the confirm dialog, and formatting.
import { ApiError } from './api.js';

export const $ = (id) => document.getElementById(id);

// h builds an element. attrs: "text" sets textContent, "on<event>" adds a
// listener, false/null leave the attribute out, anything else is set as is.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// rows replaces a table body's rows; each cell is [label, content, class?]
// so that phone-width tables can show the column name beside the value.
export function rows(table, list, cells) {
  const tbody = table.tBodies[0];
  tbody.replaceChildren(...list.map((item) => {
    const tr = h('tr');
    for (const [label, content, cls] of cells(item)) {
      tr.append(h('td', { 'data-label': label, class: cls || null }, content));
    }
    return tr;
  }));
}

// showError renders err into el (a .problem box): the problem's detail and
// one line per invalid field. A null err hides the box.
export function showError(el, err) {
  if (!err) { el.hidden = true; el.replaceChildren(); return; }
  let head = err.message || String(err);
  let fields = [];
  if (err instanceof ApiError && err.problem) {
    const p = err.problem;
    fields = (p.errors || []).map((f) => `${f.field}: ${f.message}`);
    head = fields.length ? (p.title || 'Invalid request') : [p.title, p.detail].filter(Boolean).join(': ');
    if (err.status) head = `${err.status} ${head}`;
  } else if (err instanceof ApiError && err.status) {
    head = `${err.status}: ${head}`;
  }
  el.replaceChildren(h('strong', { text: head }), fields.length ? h('ul', {}, fields.map((f) => h('li', { text: f }))) : '');
  el.hidden = false;
}

// showFieldErrors puts a 400's field errors next to the fields of a form:
// ids are the form's controls, each with an element "<id>-error" under it,
// and slot maps an API field ("filter.data.total.$gte", "rate.limit") to
// one of ids, or to nothing. The box el shows what no field took, or
// points at the fields. A null err clears them all.
export function showFieldErrors(el, ids, slot, err) {
  for (const id of ids) {
    $(id).removeAttribute('aria-invalid');
    $(id + '-error').replaceChildren();
    $(id + '-error').hidden = true;
  }
  const fields = err instanceof ApiError ? err.problem?.errors || [] : [];
  if (!fields.length) { showError(el, err); return; }
  const rest = [];
  for (const f of fields) {
    const id = slot(f.field);
    if (!id) { rest.push(f); continue; }
    $(id).setAttribute('aria-invalid', 'true');
    $(id + '-error').append(h('span', { class: 'stack', text: `${f.field}: ${f.message}` }));
    $(id + '-error').hidden = false;
  }
  const p = err.problem;
  showError(el, new ApiError(err.status, { ...p, errors: rest,
    detail: rest.length ? p.detail : `${fields.length === 1 ? 'one field' : fields.length + ' fields'} to mend, marked above` }));
}

const banner = () => $('error');
export function reportError(err) {
  if (err) console.warn(err);
  showError($('error-body'), err);
  banner().hidden = !err;
}

let noticeTimer;
export function notice(text) {
  $('notice').textContent = text;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { $('notice').textContent = ''; }, 6000);
}

// busy disables a button while f runs.
export async function busy(button, f) {
  button.disabled = true;
  try { return await f(); } finally { button.disabled = false; }
}

// confirmAction opens the confirm dialog; Confirm runs action, whose error
// is shown inside the dialog (which stays open). Escape or Cancel close it.
// It resolves to the action's result, or undefined when cancelled.
export function confirmAction({ title, message, ok = 'Confirm', action }) {
  const dlg = $('confirm-dialog');
  const opener = document.activeElement;
  $('confirm-title').textContent = title;
  $('confirm-message').textContent = message;
  $('confirm-ok').textContent = ok;
  showError($('confirm-error'), null);
  return new Promise((resolve) => {
    let result;
    const form = $('confirm-form');
    const done = () => {
      form.removeEventListener('submit', submit);
      $('confirm-cancel').removeEventListener('click', cancel);
      dlg.removeEventListener('close', done);
      if (opener && opener.isConnected) opener.focus();
      resolve(result);
    };
    const cancel = () => dlg.close();
    const submit = async (e) => {
      e.preventDefault();
      try {
        result = await busy($('confirm-ok'), action);
        dlg.close();
      } catch (err) {
        showError($('confirm-error'), err);
      }
    };
    form.addEventListener('submit', submit);
    $('confirm-cancel').addEventListener('click', cancel);
    dlg.addEventListener('close', done);
    dlg.showModal();
    $('confirm-cancel').focus();
  });
}

// Formatting.
export function when(s) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return s;
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}
export function timeEl(s) {
  return s ? h('time', { datetime: s, title: s, text: when(s) + relative(s) }) : '—';
}
export function relative(s) {
  const sec = Math.round((new Date(s) - Date.now()) / 1000);
  if (!isFinite(sec) || Math.abs(sec) > 86400) return '';
  const abs = Math.abs(sec);
  const span = abs < 90 ? `${abs}s` : abs < 5400 ? `${Math.round(abs / 60)}m` : `${Math.round(abs / 3600)}h`;
  return sec >= 0 ? ` (in ${span})` : ` (${span} ago)`;
}
// zoned formats an instant in the IANA zone tz, or in the viewer's own
// zone when tz is empty: weekday, date (the year only when it is not this
// one), 24-hour time to the second (to the millisecond when there are any)
// and the zone's short name. A zone the browser does not know leaves the
// instant as given.
//
// abbr, when given, names the zone instead of the browser's short name:
// the API's (Go's) abbreviation, which the CLI prints too ("CET" where
// Chromium's English says "GMT+1").
export function zoned(s, tz, abbr) {
  const d = new Date(s);
  if (!s || isNaN(d)) return s || '—';
  const opts = { weekday: 'short', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
  if (!abbr) opts.timeZoneName = 'short';
  if (d.getFullYear() !== new Date().getFullYear()) opts.year = 'numeric';
  if (d.getUTCMilliseconds()) opts.fractionalSecondDigits = 3;
  if (tz) opts.timeZone = tz;
  try { return new Intl.DateTimeFormat(undefined, opts).format(d) + (abbr ? ' ' + abbr : ''); } catch { return s; }
}
// dur shows a Go duration ("1h0m0s", "1m30s", "250ms") the way people
// write it: zero parts left out ("1h", "1m30s"), whole days as days
// ("1d", "1d12h") unless days is false (inputs the API reads back take
// Go's syntax, which has no days). Text that is not a duration is shown as is.
export function dur(s, { days = true } = {}) {
  if (typeof s !== 'string' || !/^(\d+(\.\d+)?(h|m|s|ms|us|µs|ns))+$/.test(s)) return s ?? '—';
  const unit = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
  let total = 0;
  for (const [, n, , u] of s.matchAll(/(\d+(\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) total += Number(n) * unit[u];
  if (total === 0) return '0s';
  const parts = [];
  for (const [u, size] of [['d', 86400e3], ['h', 3600e3], ['m', 60e3]]) {
    if (u === 'd' && !days) continue;
    const n = Math.floor(total / size);
    if (n) { parts.push(n + u); total -= n * size; }
  }
  if (total >= 1000) parts.push(+(total / 1000).toFixed(3) + 's');
  else if (total >= 1) parts.push(+total.toFixed(3) + 'ms');
  else if (total > 0) parts.push(+(total * 1000).toFixed(3) + 'µs');
  return parts.join('');
}

// url shows a URL on one line, cut with an ellipsis where it is too long
// for its column; the whole URL is its title (and what a copy takes).
export function url(u, testid) {
  return u ? h('span', { class: 'url', title: u, 'data-testid': testid || null, text: u }) : h('span', { class: 'muted', text: '(none)' });
}

export const viewerZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;
export const num = (n) => (n ?? 0).toLocaleString();
export const ms = (n) => (n >= 1000 ? (n / 1000).toFixed(2) + ' s' : n >= 10 ? Math.round(n) + ' ms' : (n || 0).toFixed(1) + ' ms');

// toLocalInput formats a Date for a datetime-local input (local time).
export function toLocalInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
// fromLocalInput turns a datetime-local value into RFC 3339 (UTC, ms).
export function fromLocalInput(v) {
  const d = new Date(v);
  if (!v || isNaN(d)) throw new Error('Choose a valid date and time.');
  return d.toISOString();
}

export function stateBadge(state) {
  return h('span', { class: `state ${state}`, 'data-state': state, text: state === 'active' ? 'in flight' : state });
}

export const span = (...children) => h('span', {}, ...children);

// attemptsText says how many attempts a job has made against max, its
// limit. A replay gives a dead job max more, so after one the count that
// the limit applies to starts again (replayed_after is where it starts);
// the attempt numbers go on, and the total is said too.
export function attemptsText(j, max) {
  const since = j.attempts - (j.replayed_after || 0);
  if (!max) return String(j.attempts);
  return j.replayed_after ? `${since} of ${max} since the replay (${j.attempts} in all)` : `${j.attempts} of ${max}`;
}

export function lastAttempt(j) {
  const a = j.last_attempt;
  if (!a) return '—';
  const status = a.status ? `HTTP ${a.status}` : 'no response';
  const good = a.status >= 200 && a.status < 300;
  return h('span', { class: good ? 'good' : 'bad', title: a.error || '' }, status + (a.error ? ` · ${a.error}` : ''));
}
