// Signing keys: the tenant's current and next callback secrets, masked until
// revealed, and rotation.
import { call, session, tenantQuery } from './api.js';
import { $, confirmAction, notice, reportError } from './dom.js';
import { state } from './store.js';

let keys = null;
const shown = { current: false, next: false };

const tenant = () => (session.admin ? state.filter : session.claims.tenant);

export const keysView = {
  async show() {
    shown.current = shown.next = false;
    keys = null;
    const pick = session.admin && !state.filter;
    $('keys-pick').hidden = !pick;
    $('keys-list').hidden = $('keys-rotate').hidden = pick;
    if (pick) return;
    $('keys-tenant').textContent = tenant();
    $('keys-tenant').hidden = $('keys-tenant-label').hidden = !session.admin;
    keys = await call('GET', '/v1/signing-keys', { query: tenantQuery(tenant()) });
    render();
  },
};

function mask(s) {
  if (!s) return '(none)';
  const at = s.indexOf('_') + 1;
  return s.slice(0, at) + '•'.repeat(16) + s.slice(-4);
}

function render() {
  for (const k of ['current', 'next']) {
    $(`key-${k}`).textContent = shown[k] ? keys[k] : mask(keys[k]);
    $(`key-${k}-reveal`).textContent = shown[k] ? 'Hide' : 'Reveal';
    $(`key-${k}-reveal`).setAttribute('aria-pressed', String(shown[k]));
  }
}

for (const k of ['current', 'next']) {
  $(`key-${k}-reveal`).addEventListener('click', () => {
    if (!keys) return;
    shown[k] = !shown[k];
    render();
  });
}

$('keys-rotate').addEventListener('click', async () => {
  try {
    const res = await confirmAction({
      title: 'Rotate signing keys?',
      message: `The next secret becomes current for ${tenant()}'s callbacks from now on, and a new next secret is drawn. ` +
        'Receivers that only know the current secret will reject callbacks until they are updated.',
      ok: 'Rotate',
      action: () => call('POST', '/v1/signing-keys/rotate', { query: tenantQuery(tenant()) }),
    });
    if (!res) return;
    keys = res;
    shown.current = shown.next = false;
    render();
    notice('Signing keys rotated.');
  } catch (e) {
    reportError(e);
  }
});
