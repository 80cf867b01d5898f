// The Pail tree of a commit: shards drawn as a tree that loads each shard
// when it is opened (a repository of millions of records opens at the root
// and reads only what the person expands), and the way from the root to one
// record's key highlighted.

import * as api from './api.js';
import { h, a, repoPath, withQuery, cidText, num, loading, errorBox } from './dom.js';

const ENTRIES_PAGE = 200;
/** Ids given to shards' entry lists so far (for aria-controls). */
let lists = 0;

export async function pail(ctx) {
  const { did } = ctx.params;
  const rev = ctx.query.get('rev') || undefined;
  const key = ctx.query.get('key') || undefined;
  document.title = `Pail tree · ${did} · datarepo`;
  ctx.crumbs([did, repoPath(did)], ['Pail tree']);
  const status = h('div', {}, loading());
  // Disclosure buttons (aria-expanded, aria-controls) in nested lists: every
  // control is a button or a link, reachable with Tab.
  const tree = h('ul', { class: 'tree', 'aria-label': 'Pail shards' });
  ctx.page.append(h('h1', {}, 'Pail tree'),
    h('p', { class: 'muted' }, 'Every shard is a dag-cbor block; its entries are keys (after the prefix of the way down) with a record CID, a link to a child shard, or both.'),
    status, tree);
  let root;
  let steps = null;
  let commitRev = rev;
  try {
    if (key) {
      const slash = key.indexOf('/');
      const path = await api.get('dev.datarepo.getPailPath', { repo: did, collection: key.slice(0, slash), rkey: key.slice(slash + 1), rev });
      root = path.root;
      commitRev = path.rev;
      steps = path.steps;
      status.replaceChildren(h('p', { class: 'notice' },
        path.found ? `The way to ${key} is highlighted (${steps.length} shard${steps.length === 1 ? '' : 's'} deep).` : `${key} is not in this tree; the shard where it would be is highlighted.`,
        ' ', a(withQuery(repoPath(did, 'pail'), { rev }), 'Clear')));
    } else if (rev) {
      root = (await api.get('dev.datarepo.getCommit', { repo: did, rev, ops: false })).commit.data;
      status.replaceChildren();
    } else {
      const c = (await api.get('dev.datarepo.listCommits', { repo: did, limit: 1 })).commits[0];
      if (!c) throw new Error('this repository has no commits');
      root = c.data;
      commitRev = c.rev;
      status.replaceChildren();
    }
  } catch (e) {
    status.replaceChildren(errorBox(e));
    return;
  }
  ctx.page.querySelector('h1').append(' ', h('span', { class: 'muted' }, 'at rev '), a(repoPath(did, 'commit', commitRev), h('code', {}, commitRev)));
  const node = shardNode({ did, rev: commitRev }, root);
  tree.append(node.li);
  if (steps) await followPath(node, steps, 0);
  else await node.expand();
  performance.mark('tree-shown');
  ctx.page.dataset.ready = 'tree';
}

/** Opens the shards along `steps` from `node`, marking the entries taken. */
async function followPath(node, steps, i) {
  const step = steps[i];
  if (!step) return;
  node.li.classList.add('on-path');
  await node.expand();
  const entry = await node.find(step.entry);
  if (!entry) return;
  entry.li.classList.add('on-path');
  if (i === steps.length - 1) {
    entry.li.setAttribute('aria-current', 'true');
    entry.li.scrollIntoView({ block: 'center' });
    return;
  }
  if (entry.child) await followPath(entry.child, steps, i + 1);
}

/** A key drawn as the prefix it extends (muted) and its own piece. */
const keyText = (prefix, piece) => h('span', { class: 'key' }, prefix ? h('span', { class: 'muted' }, prefix) : '', piece || '(empty)');

/**
 * A shard as a tree item that loads its entries when opened: the root, or
 * the child linked from the entry `piece` of a shard under `parent`.
 */
function shardNode(view, cid, parent = null, piece = '', known = null) {
  const prefix = parent === null ? '' : parent + piece;
  const listId = `shard-list-${++lists}`;
  const toggle = h('button', { type: 'button', class: 'toggle', 'aria-expanded': 'false', 'aria-controls': listId, 'aria-label': `Open the shard of ${prefix ? JSON.stringify(prefix) : 'the root'}` }, '▸');
  const summary = h('span', { class: 'summary muted' });
  const entries = h('ul', { id: listId, hidden: true });
  const label = parent === null ? h('span', { class: 'prefix' }, '(root)') : keyText(parent, piece);
  const li = h('li', { class: parent === null ? 'shard' : 'shard entry', dataset: { cid, prefix, key: piece } },
    h('div', { class: 'node' }, toggle, ' ', label, ' ', summary, ' ', cidText(cid)),
    entries);
  const byKey = new Map();
  function showSummary(count, size, maxSize) {
    const fill = Math.min(1, size / maxSize);
    summary.replaceChildren(`${num(count)} entr${count === 1 ? 'y' : 'ies'} · ${num(size)} of ${num(maxSize)} bytes `,
      h('meter', { min: 0, max: 1, value: fill, title: `${(fill * 100).toFixed(1)}% of maxSize` }));
  }
  // What the parent's page said about this shard, before it is opened.
  if (known) showSummary(known.entryCount, known.size, known.maxSize);
  let loaded = null;
  let cursor;
  let done = false;

  async function loadPage() {
    const more = entries.querySelector(':scope > li.more');
    if (more) more.replaceChildren(loading());
    let res;
    try {
      res = await api.get('dev.datarepo.getShard', { repo: view.did, cid, cursor, limit: ENTRIES_PAGE, children: true });
    } catch (e) {
      (more || entries).replaceChildren(errorBox(e));
      done = true;
      return;
    }
    if (more) more.remove();
    showSummary(res.entryCount, res.size, res.maxSize);
    for (const e of res.entries) entries.append(entryItem(e, res.maxSize));
    cursor = res.cursor;
    done = !cursor;
    if (!done) {
      entries.append(h('li', { class: 'more' }, h('button', { type: 'button', onclick: () => loadPage() }, `More entries (${num(res.entryCount - byKey.size)} not shown)`)));
    }
  }

  // An entry is a value (a record), a link to a child shard (drawn as
  // that shard), or both (the value, with the child shard below it).
  function entryItem(e, maxSize) {
    const known = e.child ? { ...e.child, maxSize } : null;
    if (e.link && !e.data) {
      const child = shardNode(view, e.link, prefix, e.key, known);
      byKey.set(e.key, { li: child.li, child });
      return child.li;
    }
    const full = prefix + e.key;
    const slash = full.indexOf('/');
    const rec = slash > 0 ? withQuery(repoPath(view.did, full.slice(0, slash), full.slice(slash + 1)), { rev: view.rev }) : null;
    const li = h('li', { class: 'entry', dataset: { key: e.key } },
      h('div', { class: 'node' }, keyText(prefix, e.key), ' → ', rec ? a(rec, 'record') : 'value', ' ', cidText(e.data)));
    const item = { li, child: null };
    if (e.link) {
      item.child = shardNode(view, e.link, prefix, e.key, known);
      li.append(h('ul', {}, item.child.li));
    }
    byKey.set(e.key, item);
    return li;
  }

  async function expand() {
    toggle.setAttribute('aria-expanded', 'true');
    toggle.textContent = '▾';
    entries.hidden = false;
    if (!loaded) {
      entries.replaceChildren(h('li', { class: 'more' }, loading()));
      loaded = loadPage();
    }
    await loaded;
  }
  function collapse() {
    toggle.setAttribute('aria-expanded', 'false');
    toggle.textContent = '▸';
    entries.hidden = true;
  }
  toggle.addEventListener('click', () => (entries.hidden ? expand() : collapse()));

  /** The entry with this key, loading further pages until it is found. */
  async function find(key) {
    await expand();
    while (!byKey.has(key) && !done) await loadPage();
    return byKey.get(key) || null;
  }
  return { li, expand, find };
}
