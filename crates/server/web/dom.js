// Small DOM helpers: elements built from data, never from HTML strings, so
// nothing a record holds can become markup.

/** An element: `attrs` are properties (`class`, `on*` handlers, dataset…). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    // `value` as a property: a textarea's attribute is not its content.
    else if (k === 'value' || (k in el && typeof v !== 'string')) el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

/** A link inside the interface. */
export const a = (href, ...children) => h('a', { href }, ...children);

/** `/repo/<did>/…` with each part escaped. */
export function repoPath(did, ...parts) {
  return ['/repo', did, ...parts].map((p, i) => (i === 0 ? p : encodeURIComponent(p))).join('/');
}

/** A path with a query string of the non-empty `params`. */
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A CID shortened for tables, whole in its title and when copied. */
export function cidText(cid) {
  if (!cid) return h('span', { class: 'muted' }, '—');
  return h('code', { class: 'cid', title: cid }, `${cid.slice(0, 10)}…${cid.slice(-6)}`);
}

/** An instant as the person's local date and time. */
export function timeText(date) {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: date.toISOString(), title: date.toISOString() }, date.toLocaleString());
}

export const num = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : String(n));

/** Text longer than `max` characters, cut with a button to show it all. */
export function truncated(text, max = 120) {
  if (text.length <= max) return h('span', {}, text);
  const span = h('span', { class: 'trunc' }, text.slice(0, max), '…');
  const more = h('button', {
    type: 'button', class: 'link more', 'aria-label': 'Show the whole value',
    onclick: () => { span.replaceChildren(text); more.remove(); },
  }, 'more');
  return h('span', {}, span, ' ', more);
}

export const loading = (what = 'Loading…') => h('p', { class: 'loading', role: 'status' }, what);

/** An error as a person reads it: the API's message, and its name. */
export function errorBox(e, prefix = '') {
  const msg = e && e.message ? e.message : String(e);
  const box = h('div', { class: 'error', role: 'alert' }, prefix ? `${prefix}: ` : '', msg);
  if (e && e.error && e.error !== 'Error') box.append(' ', h('span', { class: 'muted' }, `(${e.error})`));
  if (e && (e.status === 401 || e.status === 403)) {
    box.append(h('div', {}, 'Enter the server\'s token at the top of the page to see this.'));
  }
  return box;
}

/** Fills `el` with the outcome of `promise`: `render(value)`, or the error. */
export async function fill(el, promise, render) {
  try {
    const value = await promise;
    el.replaceChildren(...[render(value)].flat());
  } catch (e) {
    el.replaceChildren(errorBox(e));
  }
}
