// kairos admin page: sign-in (a pasted token, or one in a link's
// #token=…), hash routing (#/view?params) and the 2-second polling of the
// view on screen.
import { call, session, whenUnauthorized } from './api.js';
import { $, showError, reportError } from './dom.js';
import { state } from './store.js';
import * as overview from './overview.js';
import * as topics from './topics.js';
import { jobsView, jobView, newView } from './jobs.js';
import { deadView } from './dead.js';
import { schedulesView } from './schedules.js';
import { keysView } from './keys.js';
import { subscriptionsView } from './subscriptions.js';
import { messageView } from './messages.js';

const views = { overview, topics, jobs: jobsView, job: jobView, schedules: schedulesView, new: newView, dead: deadView, keys: keysView,
  subscriptions: subscriptionsView, message: messageView };
const POLL_MS = 2000;
let current = null; // the view on screen

function parseHash() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  return { name: views[path] ? path : 'overview', params: new URLSearchParams(query || '') };
}

function showSection(name) {
  for (const s of document.querySelectorAll('main > section')) s.hidden = s.id !== 'view-' + name;
  for (const a of document.querySelectorAll('#nav a')) {
    const on = a.dataset.view === name || (name === 'job' && a.dataset.view === 'jobs') || (name === 'message' && a.dataset.view === 'subscriptions');
    on ? a.setAttribute('aria-current', 'page') : a.removeAttribute('aria-current');
  }
}

function signedIn() {
  const on = !!session.token;
  $('nav').hidden = $('session').hidden = !on;
  if (!on) return false;
  const c = session.claims;
  document.body.classList.toggle('admin', c.admin);
  // An admin token's sub names who holds it (dev mode's is "admin"): said
  // once, then what the token may do.
  const who = c.tenant && c.tenant.toLowerCase() !== 'admin' ? `${c.tenant} · ` : '';
  $('identity').textContent = c.admin ? `${who}admin: every tenant` : `tenant ${c.tenant}`;
  $('tenant-scope').hidden = !c.admin;
  return true;
}

// Routes and refreshes run one at a time, in order, so a slow load can never
// paint over the view that a later one showed.
let queue = Promise.resolve();
function serial(f) {
  queue = queue.then(f, f);
  return queue;
}

const route = () => serial(async () => {
  if (!signedIn()) {
    current = null;
    showSection('signin');
    $('token-input').focus();
    return;
  }
  const { name, params } = parseHash();
  current = views[name];
  showSection(name);
  reportError(null);
  try {
    await current.show(params);
  } catch (e) {
    reportError(e);
  }
});

// Polling: refresh the view on screen every 2 s while the tab is visible
// and no dialog is open, never two refreshes at once. A failed refresh shows
// in the error banner and clears itself when a later one succeeds.
let polling = false;
let pollFailed = false;
setInterval(() => {
  if (polling || document.hidden || !session.token || document.querySelector('dialog[open]')) return;
  polling = true;
  serial(async () => {
    if (!current?.refresh) return;
    try {
      await current.refresh();
      if (pollFailed) reportError(null);
      pollFailed = false;
    } catch (e) {
      if (e.status !== 401) { reportError(e); pollFailed = true; }
    }
  }).finally(() => { polling = false; });
}, POLL_MS);

whenUnauthorized((err) => {
  session.token = '';
  showError($('signin-error'), err);
  route();
});

// Signing in or out reloads the page, so that nothing one token showed is
// left in the page for the next.
$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const tok = $('token-input').value.trim().replace(/^Bearer\s+/i, '');
  showError($('signin-error'), null);
  if (!tok) return;
  session.token = tok;
  try {
    await call('GET', '/v1/topics');
  } catch (err) {
    session.token = '';
    showError($('signin-error'), err);
    return;
  }
  location.reload();
});

$('signout').addEventListener('click', () => {
  session.token = '';
  history.replaceState(null, '', location.pathname);
  location.reload();
});

$('tenant-filter').addEventListener('change', () => {
  state.filter = $('tenant-filter').value.trim();
  route();
});

$('error-close').addEventListener('click', () => reportError(null));
$('nav').addEventListener('click', () => { $('notice').textContent = ''; });
// A link with #token=… (the dev mode's banner prints one) signs in as a
// pasted token does: the token is kept where a pasted one is and taken out
// of the address bar and the history at once. The fragment never reaches
// a server, unlike a query. A bad token ends on the sign-in form with the
// server's reason.
function signInFromLink() {
  const m = location.hash.match(/^#token=([^&]+)/);
  if (!m) return;
  history.replaceState(null, '', location.pathname + location.search);
  const tok = decodeURIComponent(m[1]).trim().replace(/^Bearer\s+/i, '');
  if (tok) session.token = tok;
}

window.addEventListener('hashchange', () => {
  // another token: a fresh page, as a sign-in from the form gives
  if (location.hash.startsWith('#token=')) { signInFromLink(); location.reload(); return; }
  // After following a link, start reading at the new view; a filter that
  // changed the route keeps its focus.
  if (document.activeElement?.tagName === 'A') $('main').focus({ preventScroll: true });
  route();
});
signInFromLink();
route();
