// Overview: per topic counts from GET /v1/stats, recent delivery figures and
// (for admins looking at every tenant) the due-soon histogram.
import { call, session } from './api.js';
import { $, h, rows, num, ms, when } from './dom.js';
import { state, scopeQuery, rememberTenants, link } from './store.js';

const SVG = 'http://www.w3.org/2000/svg';

export const show = refresh;

export async function refresh() {
  const s = await call('GET', '/v1/stats', { query: scopeQuery() });
  state.stats = s;
  const topics = s.topics || [];
  rememberTenants(topics.map((t) => t.tenant));
  const c = (t, st) => (t.counts && t.counts[st]) || 0;
  const sum = (f) => topics.reduce((n, t) => n + f(t), 0);

  const minutes = topics[0]?.recent?.minutes || 5;
  $('window').textContent = minutes;
  $('tiles').replaceChildren(
    tile('Scheduled', sum((t) => c(t, 'scheduled')), 'tile-scheduled'),
    tile('Ready', sum((t) => c(t, 'ready')), 'tile-ready'),
    tile('In flight', sum((t) => c(t, 'active')), 'tile-active'),
    tile('Retrying', sum((t) => c(t, 'retrying')), 'tile-retrying'),
    tile(`Delivered (${minutes} min)`, sum((t) => t.recent?.delivered || 0), 'tile-delivered'),
    tile('Dead', sum((t) => c(t, 'dead')), 'tile-dead'),
    tile('Delivered /s', sum((t) => t.recent?.delivered_per_second || 0).toFixed(2), 'tile-rate'),
  );

  rows($('overview-table'), topics, (t) => {
    const at = { tenant: t.tenant, topic: t.topic };
    const lat = t.recent?.lateness || {};
    return [
      ['Topic', h('a', { href: link('jobs', at), 'data-testid': `ov-topic-${t.topic}`, text: t.topic })],
      ['Tenant', t.tenant, 'admin-only'],
      ['Scheduled', cell(c(t, 'scheduled'), t, 'scheduled'), 'num'],
      ['Ready', cell(c(t, 'ready'), t, 'ready'), 'num'],
      ['In flight', cell(c(t, 'active'), t, 'active'), 'num'],
      ['Retrying', cell(c(t, 'retrying'), t, 'retrying'), 'num'],
      ['Delivered', cell(t.recent?.delivered || 0, t, 'delivered'), 'num'],
      ['Dead', c(t, 'dead') ? h('a', { href: link('dead', at), class: 'bad', 'data-testid': `ov-dead-${t.topic}`, text: num(c(t, 'dead')) }) : cell(0, t, 'dead'), 'num'],
      ['Expired', c(t, 'expired') ? h('a', { href: link('jobs', { ...at, state: 'expired' }), 'data-testid': `ov-expired-${t.topic}`, text: num(c(t, 'expired')) }) : cell(0, t, 'expired'), 'num'],
      ['Rate /s', `${(t.recent?.delivered_per_second || 0).toFixed(2)}` + (t.recent?.failed_per_second ? ` (${t.recent.failed_per_second.toFixed(2)} failing)` : ''), 'num'],
      ['Lateness', lat.samples ? `${ms(lat.p50_ms)} / ${ms(lat.p90_ms)} / ${ms(lat.p99_ms)}` : '—', 'num'],
    ];
  });
  $('overview-empty').hidden = topics.length > 0;

  const due = s.due_next_hour;
  $('due-card').hidden = !(session.admin && Array.isArray(due));
  if (!$('due-card').hidden) $('due-histogram').replaceChildren(histogram(due));
  $('updated').textContent = 'Updated ' + when(s.at).split(', ').pop();
}

function tile(label, value, testid) {
  return h('div', { class: 'tile', 'data-testid': testid }, h('b', { text: typeof value === 'number' ? num(value) : value }), h('span', { text: label }));
}

function cell(n, t, st) {
  return h('span', { 'data-testid': `count-${t.tenant}-${t.topic}-${st}`, text: num(n) });
}

// histogram draws 5-minute slots as an inline SVG bar chart.
function histogram(due) {
  const W = 480, H = 160, top = 18, base = 136, slot = W / due.length, max = Math.max(1, ...due);
  const svg = document.createElementNS(SVG, 'svg');
  const label = 'Jobs due per 5-minute slot: ' + due.map((n, i) => `${i * 5}-${i * 5 + 5} min: ${n}`).join(', ');
  for (const [k, v] of Object.entries({ viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'hist' })) svg.setAttribute(k, v);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  el('line', { x1: 0, x2: W, y1: base, y2: base });
  due.forEach((n, i) => {
    const bh = Math.round((n / max) * (base - top));
    const x = i * slot + slot * 0.15;
    const r = el('rect', { x, y: base - bh, width: slot * 0.7, height: Math.max(bh, n ? 2 : 0), rx: 2, 'data-slot': i, 'data-count': n });
    r.append(Object.assign(document.createElementNS(SVG, 'title'), { textContent: `in ${i * 5}-${i * 5 + 5} min: ${n} jobs` }));
    el('text', { x: x + slot * 0.35, y: base - bh - 4, 'text-anchor': 'middle', class: 'count' }, n ? num(n) : '');
    el('text', { x: x + slot * 0.35, y: base + 16, 'text-anchor': 'middle' }, i === 0 ? 'now' : `+${i * 5}`);
  });
  const wrap = h('div', { class: 'hist' });
  wrap.append(svg);
  return wrap;
}
