// The router: every view has its own path (bookmarkable, shareable), links
// inside the interface change the view without reloading the page, and
// back/forward redraw the view of the path they return to.

import { token, get, session } from './api.js';
import { h, a } from './dom.js';
import * as views from './views.js';

const main = document.getElementById('main');
const crumbs = document.getElementById('crumbs');

/** The view for a path: [view function, path parameters]. */
function route(pathname) {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return [views.home, {}];
  if (parts[0] !== 'repo' || parts.length < 2) return [views.notFound, {}];
  const [, did, ...rest] = parts;
  if (rest.length === 0) return [views.repository, { did }];
  if (rest.length === 1 && rest[0] === 'commits') return [views.commits, { did }];
  if (rest.length === 2 && rest[0] === 'commit') return [views.commit, { did, rev: rest[1] }];
  if (rest.length === 1 && rest[0] === 'pail') return [views.pail, { did }];
  if (rest.length === 2 && rest[0] === 'block') return [views.block, { did, cid: rest[1] }];
  // Collections are NSIDs, which always hold a dot; the words above never do.
  if (rest.length === 1) return [views.collection, { did, collection: rest[0] }];
  if (rest.length === 2) return [views.record, { did, collection: rest[0], rkey: rest[1] }];
  return [views.notFound, {}];
}

let drawn = 0;

async function draw() {
  const seq = ++drawn;
  const [view, params] = route(location.pathname);
  const query = new URLSearchParams(location.search);
  const page = h('div', { class: 'view' });
  main.replaceChildren(page);
  crumbs.replaceChildren();
  const ctx = {
    params,
    query,
    page,
    /** Whether this view is still the one shown. */
    current: () => seq === drawn,
    crumbs(...items) {
      const list = [a('/', 'Repositories')];
      for (const [label, href] of items) list.push(' / ', href ? a(href, label) : h('span', {}, label));
      crumbs.replaceChildren(...list);
    },
    redraw: draw,
  };
  try {
    await view(ctx);
  } catch (e) {
    if (ctx.current()) page.replaceChildren(h('div', { class: 'error', role: 'alert' }, String(e.message || e)));
  }
}

/** Shows `href` (a path in this interface) as a new history entry. */
export function go(href, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  draw().then(() => main.focus({ preventScroll: true }));
  window.scrollTo(0, 0);
}
views.setNavigate(go);

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const link = e.target.closest('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/xrpc/')) return;
  if (url.pathname === location.pathname && url.search === location.search && url.hash) return;
  e.preventDefault();
  go(url.pathname + url.search + url.hash);
});
window.addEventListener('popstate', draw);

// "/" puts the cursor in the page's query box; "n" and "p" page through.
document.addEventListener('keydown', (e) => {
  if (e.metaKey || e.ctrlKey || e.altKey) return;
  const typing = e.target instanceof Element && e.target.closest('input, textarea, select, [contenteditable]');
  if (typing) return;
  if (e.key === '/') {
    const box = document.querySelector('[data-query-box]');
    if (box) { e.preventDefault(); box.focus(); box.select(); }
  } else if (e.key === 'n' || e.key === 'p') {
    const link = document.querySelector(e.key === 'n' ? 'a[rel=next]' : 'a[rel=prev]');
    if (link) { e.preventDefault(); link.click(); }
  }
});

// The token form: kept for this tab only.
const form = document.getElementById('token-form');
const input = document.getElementById('token-input');
const clear = document.getElementById('token-clear');
const state = document.getElementById('token-state');
function showToken() {
  const set = Boolean(token.get());
  clear.hidden = !set;
  state.textContent = set ? 'token set: checking it…' : '';
  document.body.classList.toggle('can-write', set || Boolean(session.get()));
  if (!set) return;
  // A cheap authenticated call says whether the server takes this token.
  const asked = token.get();
  get('dev.datarepo.checkToken').then(
    () => { if (token.get() === asked) state.textContent = 'token accepted: writes enabled'; },
    (e) => {
      if (token.get() !== asked) return;
      state.textContent = e.status === 401
        ? 'the server refuses this token: writes will fail'
        : `could not check the token (${e.message})`;
    });
}
form.addEventListener('submit', (e) => {
  e.preventDefault();
  token.set(input.value.trim());
  input.value = '';
  showToken();
  draw();
});
clear.addEventListener('click', () => { token.set(''); showToken(); draw(); });

// Signing in as an account: its session writes its own repository (the
// server refuses any other), kept in this page's memory only.
const signInForm = document.getElementById('sign-in-form');
const signedInBox = document.getElementById('signed-in');
const signedInAs = document.getElementById('signed-in-as');
const signInState = document.getElementById('sign-in-state');
function showSession() {
  const s = session.get();
  signInForm.hidden = Boolean(s);
  signedInBox.hidden = !s;
  signedInAs.textContent = s ? `signed in as ${s.handle}` : '';
  document.body.classList.toggle('can-write', Boolean(s) || Boolean(token.get()));
}
signInForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  const handle = document.getElementById('sign-in-handle');
  const password = document.getElementById('sign-in-password');
  signInState.textContent = 'signing in…';
  try {
    const s = await session.signIn(handle.value.trim(), password.value);
    signInState.textContent = `writes go to ${s.did}`;
    password.value = '';
    showSession();
    draw();
  } catch (err) {
    signInState.textContent = err.message;
  }
});
document.getElementById('sign-out').addEventListener('click', async () => {
  await session.signOut();
  signInState.textContent = '';
  showSession();
  draw();
});
showSession();
showToken();
draw();
