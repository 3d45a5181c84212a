// What the views share: the topics in scope, the admin's tenant filter and
// the tenants seen so far.
import { call, session, tenantQuery, topicPath } from './api.js';
import { $, h } from './dom.js';

export const state = { topics: [], filter: '', tenants: new Set(), stats: null };

// scopeQuery is the ?tenant= of list calls: an admin's filter, if any.
export const scopeQuery = () => (session.admin && state.filter ? { tenant: state.filter } : {});

export function rememberTenants(list) {
  const before = state.tenants.size;
  for (const t of list) if (t) state.tenants.add(t);
  if (state.tenants.size !== before) {
    $('tenant-list').replaceChildren(...[...state.tenants].sort().map((t) => h('option', { value: t })));
  }
}

export async function loadTopics() {
  const r = await call('GET', '/v1/topics', { query: scopeQuery() });
  state.topics = (r.topics || []).sort((a, b) => a.tenant.localeCompare(b.tenant) || a.name.localeCompare(b.name));
  rememberTenants(state.topics.map((t) => t.tenant));
  return state.topics;
}

// topicWithData returns the first topic in scope (in the selects' order)
// whose list at rest ('/jobs', '/schedules' or '/subscriptions') has an entry, asking a few
// topics at a time with limit=1; the first topic when none has any.
export async function topicWithData(rest) {
  const PER = 8;
  for (let i = 0; i < state.topics.length; i += PER) {
    const group = state.topics.slice(i, i + PER);
    const found = await Promise.all(group.map((t) => call('GET', topicPath(t, rest), { query: tenantQuery(t.tenant, { limit: 1 }) })
      .then((page) => (page.jobs || page.schedules || page.subscriptions || []).length > 0, () => false)));
    const at = found.indexOf(true);
    if (at >= 0) return group[at];
  }
  return state.topics[0] || null;
}

export const topicLabel = (t) => (session.admin ? `${t.tenant} / ${t.name}` : t.name);
const key = (tenant, name) => `${tenant}/${name}`; // '/' is in neither name

export function findTopic(tenant, name) {
  return state.topics.find((t) => t.name === name && (!tenant || t.tenant === tenant));
}

// fillTopicSelect lists the topics in a select and picks want (a topic), or
// the first. It returns the selected topic, if any.
export function fillTopicSelect(select, want) {
  select.replaceChildren(...state.topics.map((t) => h('option', { value: key(t.tenant, t.name), text: topicLabel(t) })));
  if (!state.topics.length) {
    select.append(h('option', { value: '', text: 'no topics: register one first' }));
    return null;
  }
  const pick = want && findTopic(want.tenant, want.name);
  select.value = key((pick || state.topics[0]).tenant, (pick || state.topics[0]).name);
  return selectedTopic(select);
}

export function selectedTopic(select) {
  const at = select.value.indexOf('/');
  const tenant = select.value.slice(0, at), name = select.value.slice(at + 1);
  return state.topics.find((t) => t.tenant === tenant && t.name === name) || null;
}

// link makes a hash route such as #/jobs?tenant=acme&topic=orders.
export function link(view, params = {}) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  return `#/${view}${q.size ? '?' + q : ''}`;
}
