// The views. Each draws into `ctx.page` from the XRPC API: what it needs
// first is awaited (so the page is never half-labelled), what is slow to
// compute (counts, facets) is filled in when it arrives.

import * as api from './api.js';
import { h, a, repoPath, withQuery, cidText, timeText, num, loading, errorBox, fill } from './dom.js';
import { jsonView, preview } from './json.js';
import { recordEditor, deleteButton } from './edit.js';
import { blobRefs, blobView, previewImage } from './blobs.js';
import { histogram, groups, cellText, parseFields } from './explore.js';

let navigate = (href) => { location.href = href; };
/** Set by the router: how views move to another path. */
export function setNavigate(f) { navigate = f; }

const PAGE = 25;

function table(headings, rows, attrs = {}) {
  return h('div', { class: 'table-wrap' }, h('table', attrs,
    h('thead', {}, h('tr', {}, headings.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows)));
}

/** "2 created, 1 deleted": what a commit changed (listCommits' counts). */
function changeSummary(counts) {
  if (!counts) return h('span', { class: 'muted' }, '—');
  const done = { create: 'created', update: 'updated', delete: 'deleted' };
  const parts = Object.keys(done).filter((k) => counts[k]).map((k) => `${num(counts[k])} ${done[k]}`);
  return parts.length ? parts.join(', ') : h('span', { class: 'muted' }, 'no records');
}

const COMMIT_COLUMNS = ['Rev', 'Time', 'Changes', 'CID', 'Signature'];

function commitRow(did, c) {
  return h('tr', {},
    h('td', {}, a(repoPath(did, 'commit', c.rev), h('code', {}, c.rev))),
    h('td', {}, timeText(new Date(c.time))),
    h('td', { class: 'changes' }, changeSummary(c.counts)),
    h('td', {}, cidText(c.cid)),
    h('td', {}, c.signed ? 'signed' : h('span', { class: 'muted' }, 'unsigned')));
}

function section(title, ...children) {
  return h('section', {}, h('h2', {}, title), ...children);
}

export async function notFound(ctx) {
  document.title = 'Not found · datarepo';
  ctx.crumbs();
  ctx.page.append(h('h1', {}, 'Not found'), h('p', {}, 'No view has this address. ', a('/', 'See the repositories.')));
}

export async function home(ctx) {
  document.title = 'Repositories · datarepo';
  ctx.crumbs();
  const body = h('div', {}, loading());
  ctx.page.append(h('h1', {}, 'Repositories'), body);
  await fill(body, api.get('com.atproto.sync.listRepos', { limit: 1000, cursor: ctx.query.get('cursor') }), (res) => {
    if (res.repos.length === 0) return h('p', { class: 'empty' }, 'No repositories yet. Write a record to create one.');
    // Counts read every key of a repository: a few at a time, not a
    // thousand requests at once.
    const counts = [];
    const rows = res.repos.map((r) => {
      const records = h('td', { class: 'n' }, '…');
      const commits = h('td', { class: 'n' }, '…');
      counts.push(() => api.get('dev.datarepo.getRepoStats', { repo: r.did }).then(
        (s) => { records.textContent = num(s.records); commits.textContent = num(s.commits); },
        () => { records.textContent = '?'; commits.textContent = '?'; }));
      return h('tr', { dataset: { repo: r.did } },
        h('td', {}, a(repoPath(r.did), r.did)),
        h('td', {}, h('code', {}, r.rev)),
        h('td', {}, timeText(api.tidTime(r.rev))),
        records, commits);
    });
    const next = async () => { while (counts.length && ctx.current()) await counts.shift()(); };
    for (let i = 0; i < 4; i++) next();
    const out = [table(['Repository', 'Head rev', 'Head time', 'Records', 'Commits'], rows)];
    if (res.cursor) out.push(h('p', {}, a(withQuery('/', { cursor: res.cursor }), 'More repositories')));
    return out;
  });
}

export async function repository(ctx) {
  const { did } = ctx.params;
  document.title = `${did} · datarepo`;
  ctx.crumbs([did]);
  const head = h('div', {}, loading());
  const cols = h('div', {}, loading());
  const recent = h('div', {}, loading());
  ctx.page.append(h('h1', {}, did),
    h('p', { class: 'actions' }, a(repoPath(did, 'commits'), 'Commit log'), a(repoPath(did, 'pail'), 'Pail tree')),
    section('Head commit', head), section('Collections', cols), section('Recent commits', recent));
  const stats = api.get('dev.datarepo.getRepoStats', { repo: did });
  const latest = api.get('com.atproto.sync.getLatestCommit', { did });
  // A repository that is not there is said once, not in every section.
  latest.catch((e) => {
    if (e && (e.error === 'RepoNotFound' || e.status === 404)) {
      ctx.page.replaceChildren(h('h1', {}, did), errorBox(e));
    }
  });
  fill(head, latest, (c) => {
    const records = h('dd', { dataset: { stat: 'records' } }, '…');
    const commits = h('dd', { dataset: { stat: 'commits' } }, '…');
    stats.then((s) => { records.textContent = num(s.records); commits.textContent = num(s.commits); },
      () => { records.textContent = '?'; commits.textContent = '?'; });
    return h('dl', { class: 'facts' },
      h('dt', {}, 'Rev'), h('dd', {}, a(repoPath(did, 'commit', c.rev), h('code', {}, c.rev))),
      h('dt', {}, 'Time'), h('dd', {}, timeText(api.tidTime(c.rev))),
      h('dt', {}, 'CID'), h('dd', {}, h('code', { class: 'wrap' }, c.cid)),
      h('dt', {}, 'Records'), records, h('dt', {}, 'Commits'), commits);
  });
  fill(cols, api.get('dev.datarepo.describeCollections', { repo: did }), (res) => {
    if (res.collections.length === 0) return h('p', { class: 'empty' }, 'No collections yet.');
    const rows = res.collections.map((c) => {
      const n = h('td', { class: 'n' }, '…');
      stats.then((s) => {
        const found = s.collections.find((x) => x.collection === c.collection);
        n.textContent = num(found ? found.records : 0);
      }, () => { n.textContent = '?'; });
      return h('tr', { dataset: { collection: c.collection } },
        h('td', {}, a(repoPath(did, c.collection), c.collection)),
        h('td', {}, h('code', {}, c.keyType)),
        n,
        h('td', {}, c.indexes.length ? c.indexes.map((i) => h('span', { class: 'tag' }, `${i.path} (${i.kind})`)) : h('span', { class: 'muted' }, 'none')),
        h('td', {}, c.lexicon ? a(`${repoPath(did, c.collection)}#lexicon`, 'yes') : h('span', { class: 'muted' }, 'no')));
    });
    return table(['Collection', 'Key type', 'Records', 'Indexes', 'Lexicon'], rows);
  });
  fill(recent, api.get('dev.datarepo.listCommits', { repo: did, limit: 10, counts: true }), (res) =>
    [table(COMMIT_COLUMNS, res.commits.map((c) => commitRow(did, c))),
      h('p', {}, a(repoPath(did, 'commits'), 'All commits'))]);
  showJobs(ctx, did, recent.parentElement);
}

/** The repository's index builds (jobs), before `next`, redrawn while one
 * runs. */
async function showJobs(ctx, did, next) {
  let res;
  try {
    res = await api.get('dev.datarepo.listJobs', { repo: did });
  } catch {
    return;
  }
  if (!ctx.current() || res.jobs.length === 0) return;
  const describe = (j) => {
    const what = j.kind === 'addIndex' ? `add index ${j.params.path} (${j.params.kind}) to ${j.params.collection}` : 'rebuild the indexes';
    const progress = j.progress.total ? `${num(j.progress.done)} of ${num(j.progress.total)} records` : `${num(j.progress.done)} records`;
    const outcome = j.state === 'failed' ? h('span', { class: 'error' }, j.error.message) : j.state === 'succeeded' ? `${num(j.result.records)} records` : progress;
    return h('tr', { dataset: { job: j.id, state: j.state } },
      h('td', {}, j.id), h('td', {}, what), h('td', {}, j.state), h('td', {}, outcome),
      h('td', { class: 'n' }, `${(j.elapsedMs / 1000).toFixed(1)} s`));
  };
  const box = ctx.page.querySelector('section[data-jobs]') || h('section', { dataset: { jobs: '' } });
  box.replaceChildren(h('h2', {}, 'Index jobs'), table(['Job', 'What', 'State', 'Progress', 'Time'], res.jobs.map(describe)));
  if (!box.isConnected) next.before(box);
  if (res.jobs.some((j) => j.state === 'running')) setTimeout(() => showJobs(ctx, did, next), 1000);
}

/** `where` with `path = value` added (as a facet link adds it). */
export function refine(where, path, value) {
  const cond = `${path} = ${JSON.stringify(value)}`;
  return where && where.trim() ? `(${where.trim()}) and ${cond}` : cond;
}

export async function collection(ctx) {
  const { did, collection: coll } = ctx.params;
  const where = ctx.query.get('where') || '';
  const cursor = ctx.query.get('cursor');
  const before = ctx.query.get('before');
  // Record-key order, ascending unless `order=desc` (newest first for TID keys).
  const order = ctx.query.get('order') === 'desc' ? 'desc' : undefined;
  // Or by an indexed field (`sort=PATH&dir=asc|desc`), and chosen columns.
  const sort = ctx.query.get('sort') || undefined;
  const dir = sort && ctx.query.get('dir') === 'desc' ? 'desc' : undefined;
  const fieldsText = ctx.query.get('fields') || '';
  const fields = parseFields(fieldsText);
  const here = repoPath(did, coll);
  document.title = `${coll} · ${did} · datarepo`;
  ctx.crumbs([did, repoPath(did)], [coll]);

  const box = h('input', {
    type: 'search', name: 'where', value: where, class: 'query', 'aria-label': 'Query (the --where language)',
    placeholder: 'Query the field indexes', spellcheck: 'false', dataset: { queryBox: '' },
  });
  const form = h('form', {
    class: 'query-form', role: 'search',
    onsubmit: (e) => { e.preventDefault(); navigate(withQuery(here, { where: box.value.trim(), order, sort, dir, fields: fieldsText })); },
  }, box, h('button', { type: 'submit' }, 'Query'), where ? a(withQuery(here, { order, sort, dir, fields: fieldsText }), 'Clear') : null);
  // The column chooser: paths of the records' values, comma-separated.
  const columns = h('input', {
    type: 'text', name: 'fields', value: fieldsText, class: 'fields', 'aria-label': 'Columns (paths, comma-separated)',
    placeholder: 'Columns: e.g. text, createdAt', spellcheck: 'false', dataset: { fieldsBox: '' },
  });
  const columnsForm = h('form', {
    class: 'fields-form',
    onsubmit: (e) => { e.preventDefault(); navigate(withQuery(here, { where: where.trim(), order, sort, dir, fields: parseFields(columns.value).join(',') })); },
  }, columns, h('button', { type: 'submit' }, 'Show columns'));
  const explore = h('div', { class: 'explore' });
  const downloads = h('p', { class: 'downloads' });
  const queryError = h('div', { class: 'query-error' });
  const count = h('p', { class: 'count', role: 'status' }, '');
  const facets = h('aside', { class: 'facets', 'aria-label': 'Facets' });
  const records = h('div', { class: 'records' }, loading());
  const editor = h('div', {});
  const create = h('button', {
    type: 'button', class: 'write-only',
    onclick: () => editor.replaceChildren(recordEditor({ did, collection: coll, onDone: (r) => navigate(new URL(r.path, location.href).pathname) })),
  }, 'New record');
  ctx.page.append(h('h1', {}, coll));

  const decl = api.get('dev.datarepo.describeCollections', { repo: did })
    .then((r) => r.collections.find((c) => c.collection === coll));
  const w = where.trim() || undefined;
  // A page before a key is read the other way from the key, then turned.
  const reverse = Boolean(before) !== Boolean(order);
  const page = sort
    ? { repo: did, collection: coll, limit: PAGE, cursor: cursor || undefined, sort, order: dir || 'asc' }
    : { repo: did, collection: coll, limit: PAGE, cursor: before || cursor || undefined, reverse: reverse || undefined };
  if (fields.length) page.fields = fields.join(',');
  const method = w || sort ? 'dev.datarepo.queryRecords' : 'com.atproto.repo.listRecords';
  // The records are asked for at once, beside the collection's description;
  // the page is laid out when the description is here, all of it at once
  // and its later content in boxes of their final size, so that nothing
  // moves once shown (a click lands where the reader saw its target).
  const asked = api.get(method, w ? { ...page, where: w } : page);
  asked.catch(() => {});
  const c = await decl.catch(() => null);
  if (!ctx.current()) return;
  const indexes = c ? c.indexes : [];
  const info = h('p', { class: 'sub muted', dataset: { info: '' } },
    c ? `key type ${c.keyType} · ${indexes.length} index${indexes.length === 1 ? '' : 'es'}` : '\u00a0');
  ctx.page.append(info, form, columnsForm, queryError,
    h('div', { class: 'actions' }, create), editor, count, explore, downloads, h('div', { class: 'with-facets' }, facets, records));
  if (c) {
    // The example names this collection's own indexes, or says there are none.
    box.placeholder = indexes.length
      ? `e.g. ${indexes.slice(0, 2).map((i) => `${i.path} ${{ keyword: '= "…"', integer: '>= 1', datetime: '>= "2026-01-01T00:00:00Z"', text: 'matches "word"' }[i.kind] || 'exists'}`).join(' and ')}`
      : 'No field indexes: add one (datarepo index add) to query';
  }
  if (c && c.lexicon) {
    // The Lexicon document, read when the person opens it.
    const body = h('div', {}, loading());
    const details = h('details', { id: 'lexicon', class: 'lexicon' }, h('summary', {}, 'Lexicon'), body);
    let read = false;
    details.addEventListener('toggle', () => {
      if (!details.open || read) return;
      read = true;
      fill(body, api.get('dev.datarepo.getLexicon', { repo: did, nsid: coll }), (r) => {
        const main = r.lexicon.defs && r.lexicon.defs.main;
        return [main && main.description ? h('p', {}, main.description) : '', jsonView(r.lexicon, did)];
      });
    });
    info.after(details);
    if (location.hash === '#lexicon') details.open = true;
  }
  const indexed = (kind) => indexes.filter((i) => i.kind === kind).map((i) => i.path);
  const sortable = new Set(indexes.filter((i) => ['integer', 'datetime', 'keyword'].includes(i.kind)).map((i) => i.path));
  // A header of an indexed column sorts by it: ascending, then descending.
  const header = (f) => {
    if (!sortable.has(f)) return f;
    const now = sort === f ? (dir === 'desc' ? '↓' : '↑') : '';
    const nextDir = sort === f && dir !== 'desc' ? 'desc' : undefined;
    return h('a', {
      href: withQuery(here, { where: w, fields: fieldsText || undefined, sort: f, dir: nextDir }),
      class: 'field-sort', dataset: { sortBy: f }, title: `Sort by ${f}${nextDir ? ' (descending)' : ''}`,
    }, `${f} ${now}`.trim());
  };
  const flip = withQuery(here, { where: w, order: order ? undefined : 'desc', fields: fieldsText || undefined });
  const keyHeader = h('a', { href: flip, class: 'sort', title: order ? 'Ascending record keys' : 'Descending record keys (newest first for TIDs)' }, `Record key ${!sort ? (order ? '↓' : '↑') : ''}`.trim());
  // Without chosen columns, the indexed fields to sort by are listed above.
  if (!fields.length && sortable.size) {
    explore.before(h('p', { class: 'sort-by muted' }, 'Sort by: ', [...sortable].map((f) => [header(f), ' '])));
  }
  if (indexed('datetime').length) {
    explore.append(histogram({ did, collection: coll, where: w, paths: indexed('datetime') }));
  }
  if (indexed('keyword').length) {
    explore.append(groups({ did, collection: coll, where: w, keywords: indexed('keyword'), integers: indexed('integer') }));
  }
  // The whole answer as a file, streamed by the server page by page.
  const exportHref = (format) => withQuery('/xrpc/dev.datarepo.exportRecords',
    { repo: did, collection: coll, where: w, fields: fields.join(','), sort, order: sort ? dir || 'asc' : undefined, format });
  downloads.replaceChildren('Download: ',
    h('a', { href: exportHref('csv'), download: `${coll}.csv`, dataset: { download: 'csv' } }, 'CSV'), ' · ',
    h('a', { href: exportHref('jsonl'), download: `${coll}.jsonl`, dataset: { download: 'jsonl' } }, 'JSON Lines'));
  count.textContent = 'counting…';
  api.get('dev.datarepo.countRecords', { repo: did, collection: coll, where: w }).then(
    (n) => { count.textContent = `${num(n.count)} ${w ? 'matching ' : ''}record${n.count === 1 ? '' : 's'}`; count.dataset.count = n.count; },
    (e) => { count.replaceChildren(errorBox(e, 'Count')); });
  const keywords = indexes.filter((i) => i.kind === 'keyword');
  if (keywords.length) facets.append(h('h2', {}, 'Facets'));
  for (const i of keywords) {
    const values = h('ul', {}, h('li', { class: 'muted' }, '…'));
    facets.append(h('section', { class: 'facet', dataset: { facet: i.path } }, h('h3', {}, i.path), values));
    fill(values, api.get('dev.datarepo.topValues', { repo: did, collection: coll, path: i.path, where: w, limit: 8 }), (t) =>
      t.top.length ? t.top.map((v) => h('li', {},
        a(withQuery(here, { where: refine(w, i.path, v.value), order }), typeof v.value === 'string' ? v.value : JSON.stringify(v.value)),
        ' ', h('span', { class: 'n muted' }, num(v.count))))
        : h('li', { class: 'muted' }, 'no values'));
  }

  let res;
  try {
    res = await asked;
  } catch (e) {
    records.replaceChildren();
    if (e.status === 400 && w) queryError.replaceChildren(errorBox(e, 'Query error'));
    else records.replaceChildren(errorBox(e));
    return;
  }
  if (!ctx.current()) return;
  const list = before && !sort ? [...res.records].reverse() : res.records;
  const rkeyOf = (r) => r.uri.slice(r.uri.lastIndexOf('/') + 1);
  const rows = list.map((r) => {
    const rkey = rkeyOf(r);
    const cells = fields.length
      ? fields.map((f) => h('td', { dataset: { field: f } }, cellText(r.value, f)))
      : [h('td', { class: 'preview' }, previewImage(did, r.value), preview(r.value))];
    return h('tr', { dataset: { rkey } },
      h('td', {}, a(repoPath(did, coll, rkey), h('code', {}, rkey))),
      ...cells,
      h('td', {}, cidText(r.cid)));
  });
  const nav = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const view = { where: w, order, sort, dir, fields: fieldsText || undefined };
  const params = (extra) => withQuery(here, { ...view, ...extra });
  // Sorted pages have opaque cursors that go forward only.
  const hasPrev = !sort && (before ? Boolean(res.cursor) : Boolean(cursor));
  const hasNext = before && !sort ? true : Boolean(res.cursor);
  if (list.length && hasPrev) nav.append(h('a', { href: params({ before: rkeyOf(list[0]) }), rel: 'prev' }, '← Previous'));
  if (cursor || before) nav.append(a(params({}), 'First'));
  const next = sort ? res.cursor : list.length && rkeyOf(list[list.length - 1]);
  if (list.length && hasNext) nav.append(h('a', { href: params({ cursor: next }), rel: 'next' }, 'Next →'));
  records.replaceChildren(list.length
    ? table([keyHeader, ...(fields.length ? fields.map(header) : ['Fields']), 'CID'], rows, { class: 'record-list' })
    : h('p', { class: 'empty' }, w ? 'No records match.' : 'No records.'), nav);
  performance.mark('records-shown');
  ctx.page.dataset.ready = 'records';
}

/** What changed between two versions of a record, field by field. */
function changedFields(older, newer) {
  const keys = new Set([...Object.keys(older || {}), ...Object.keys(newer || {})]);
  const out = [];
  for (const k of keys) {
    const x = JSON.stringify(older ? older[k] : undefined);
    const y = JSON.stringify(newer ? newer[k] : undefined);
    if (x !== y) out.push(k);
  }
  return out;
}

export async function record(ctx) {
  const { did, collection: coll, rkey } = ctx.params;
  const rev = ctx.query.get('rev') || undefined;
  document.title = `${coll}/${rkey} · ${did} · datarepo`;
  ctx.crumbs([did, repoPath(did)], [coll, repoPath(did, coll)], [rkey]);
  const body = h('div', {}, loading());
  const history = h('div', {}, loading());
  ctx.page.append(h('h1', {}, h('code', {}, rkey)), body, section('History', history));
  let r;
  try {
    r = await api.get('dev.datarepo.getRecord', { repo: did, collection: coll, rkey, rev });
  } catch (e) {
    body.replaceChildren(errorBox(e));
    r = null;
  }
  if (r) {
    const pailHref = withQuery(repoPath(did, 'pail'), { key: `${coll}/${rkey}`, rev });
    const actions = h('p', { class: 'actions' }, a(pailHref, 'Show in the Pail tree'));
    const editor = h('div', {});
    if (!rev) {
      actions.append(
        h('button', { type: 'button', class: 'write-only', onclick: () => editor.replaceChildren(recordEditor({ did, collection: coll, rkey, cid: r.cid, value: r.value, onDone: () => ctx.redraw() })) }, 'Edit'),
        deleteButton({ did, collection: coll, rkey, cid: r.cid, onDone: () => navigate(repoPath(did, coll)) }));
    }
    body.replaceChildren(
      rev ? h('p', { class: 'notice' }, `This is the record as of rev ${rev}. `, a(repoPath(did, coll, rkey), 'See the current version.')) : '',
      h('dl', { class: 'facts' },
        h('dt', {}, 'URI'), h('dd', {}, h('code', { class: 'wrap' }, r.uri)),
        h('dt', {}, 'CID'), h('dd', {}, h('code', { class: 'wrap', dataset: { cid: r.cid } }, r.cid)),
        h('dt', {}, 'Size'), h('dd', {}, `${num(r.size)} bytes (dag-cbor)`)),
      actions, editor, blobsOf(did, r.value), jsonView(r.value, did));
  }
  loadHistory(ctx, history, undefined);
}

/** The blobs record `value` refers to, shown, or nothing. */
function blobsOf(did, value) {
  const refs = blobRefs(value);
  if (!refs.length) return '';
  return h('section', { class: 'blobs', 'aria-label': 'Blobs' }, ...refs.map((ref) => blobView(did, ref)));
}

async function loadHistory(ctx, box, cursor) {
  const { did, collection: coll, rkey } = ctx.params;
  let res;
  try {
    res = await api.get('dev.datarepo.getRecordHistory', { repo: did, collection: coll, rkey, cursor });
  } catch (e) {
    box.replaceChildren(errorBox(e));
    return;
  }
  const rows = res.versions.map((v, i) => {
    const what = h('td', {}, v.action);
    if (v.action === 'update') {
      const older = res.versions[i + 1];
      what.append(' ', h('button', {
        type: 'button', class: 'link',
        onclick: async (e) => {
          e.target.replaceWith(h('span', { class: 'muted' }, '…'));
          try {
            const [x, y] = await Promise.all([
              older ? api.get('dev.datarepo.getRecord', { repo: did, collection: coll, rkey, rev: older.commit.rev }) : Promise.resolve(null),
              api.get('dev.datarepo.getRecord', { repo: did, collection: coll, rkey, rev: v.commit.rev })]);
            const fields = x ? changedFields(x.value, y.value) : null;
            what.lastChild.replaceWith(h('span', { class: 'muted' }, fields ? `fields: ${fields.join(', ') || 'none'}` : '(older version not in this page)'));
          } catch (err) { what.lastChild.replaceWith(errorBox(err)); }
        },
      }, 'what changed'));
    }
    return h('tr', { dataset: { action: v.action } },
      h('td', {}, v.action === 'delete' ? h('code', {}, v.commit.rev) : a(withQuery(repoPath(did, coll, rkey), { rev: v.commit.rev }), h('code', {}, v.commit.rev))),
      h('td', {}, timeText(new Date(v.commit.time))),
      what,
      h('td', {}, cidText(v.cid)),
      h('td', {}, a(repoPath(did, 'commit', v.commit.rev), 'commit')));
  });
  const parts = [];
  if (rows.length) parts.push(table(['Rev', 'Time', 'Change', 'CID', ''], rows, { class: 'history' }));
  else if (!cursor) parts.push(h('p', { class: 'empty' }, 'No versions in the retained commits.'));
  if (res.cursor) {
    // The paragraph is swapped for the spinner (a <p> of its own), which
    // goes once the older page is drawn, found something or not.
    const more = h('p', {}, h('button', {
      type: 'button',
      onclick: async () => {
        const spinner = loading();
        more.replaceWith(spinner);
        await loadHistory(ctx, holder, res.cursor);
        spinner.remove();
      },
    }, 'Look at older commits'));
    parts.push(more);
  }
  // Older versions go below these, into `holder`.
  const holder = h('div', {});
  box.replaceChildren(...parts, holder);
}

export async function commits(ctx) {
  const { did } = ctx.params;
  const cursor = ctx.query.get('cursor') || undefined;
  document.title = `Commits · ${did} · datarepo`;
  ctx.crumbs([did, repoPath(did)], ['Commits']);
  const body = h('div', {}, loading());
  ctx.page.append(h('h1', {}, 'Commits'), body);
  await fill(body, api.get('dev.datarepo.listCommits', { repo: did, limit: 50, cursor, counts: true }), (res) => {
    const nav = h('nav', { class: 'pager', 'aria-label': 'Pages' });
    if (cursor) nav.append(a(repoPath(did, 'commits'), 'Newest'));
    if (res.cursor) nav.append(h('a', { href: withQuery(repoPath(did, 'commits'), { cursor: res.cursor }), rel: 'next' }, 'Older →'));
    return [table(COMMIT_COLUMNS, res.commits.map((c) => commitRow(did, c)), { class: 'commit-list' }), nav];
  });
}

export async function commit(ctx) {
  const { did, rev } = ctx.params;
  document.title = `Commit ${rev} · ${did} · datarepo`;
  ctx.crumbs([did, repoPath(did)], ['Commits', repoPath(did, 'commits')], [rev]);
  const body = h('div', {}, loading());
  ctx.page.append(h('h1', {}, 'Commit ', h('code', {}, rev)), body);
  const opRow = (op) => h('tr', { dataset: { action: op.action } },
    h('td', {}, op.action),
    h('td', {}, op.action === 'delete'
      ? a(repoPath(did, op.collection, op.rkey), `${op.collection}/${op.rkey}`)
      : a(withQuery(repoPath(did, op.collection, op.rkey), { rev }), `${op.collection}/${op.rkey}`)),
    h('td', {}, cidText(op.cid)), h('td', {}, cidText(op.prev)));
  await fill(body, api.get('dev.datarepo.getCommit', { repo: did, rev }), (res) => {
    const c = res.commit;
    const done = { create: 'created', update: 'updated', delete: 'deleted' };
    const counts = Object.keys(done).map((k) => `${num(res.counts[k])} ${done[k]}`).join(', ');
    const tbody = h('tbody', {}, res.ops.map(opRow));
    // An import's commit changes millions of records: pages of them.
    const more = h('p', {});
    const showMore = (cursor) => {
      if (!cursor) { more.replaceChildren(); return; }
      more.replaceChildren(h('button', {
        type: 'button',
        onclick: async () => {
          more.replaceChildren(loading());
          try {
            const next = await api.get('dev.datarepo.getCommit', { repo: did, rev, cursor });
            tbody.append(...next.ops.map(opRow));
            showMore(next.cursor);
          } catch (e) { more.replaceChildren(errorBox(e)); }
        },
      }, 'More changes'));
    };
    showMore(res.cursor);
    const ops = res.ops.length
      ? [h('div', { class: 'table-wrap' }, h('table', { class: 'ops' },
        h('thead', {}, h('tr', {}, ['Change', 'Record', 'CID', 'Previous CID'].map((t) => h('th', { scope: 'col' }, t)))), tbody)), more]
      : [h('p', { class: 'empty' }, 'No records changed.')];
    return [
      h('dl', { class: 'facts' },
        h('dt', {}, 'Time'), h('dd', {}, timeText(new Date(c.time))),
        h('dt', {}, 'CID'), h('dd', {}, h('code', { class: 'wrap' }, c.cid)),
        h('dt', {}, 'Pail root'), h('dd', {}, a(withQuery(repoPath(did, 'pail'), { rev }), h('code', { class: 'wrap' }, c.data))),
        h('dt', {}, 'Previous'), h('dd', {}, !c.prev ? 'none (first commit)'
          : c.prevRev ? a(repoPath(did, 'commit', c.prevRev), h('code', { class: 'wrap' }, c.prev))
            : h('code', { class: 'wrap' }, c.prev)),
        h('dt', {}, 'Signature'), h('dd', {}, c.signed ? 'signed' : 'unsigned')),
      section(`Changes (${counts})`, ...ops),
    ];
  });
}

export async function block(ctx) {
  const { did, cid } = ctx.params;
  document.title = `Block ${cid} · datarepo`;
  ctx.crumbs([did, repoPath(did)], ['Block']);
  const body = h('div', {}, loading());
  ctx.page.append(h('h1', {}, 'Block'), body);
  await fill(body, api.get('dev.datarepo.getBlock', { repo: did, cid }), (b) => [
    h('dl', { class: 'facts' },
      h('dt', {}, 'CID'), h('dd', {}, h('code', { class: 'wrap' }, b.cid)),
      h('dt', {}, 'Codec'), h('dd', {}, b.codec),
      h('dt', {}, 'Size'), h('dd', {}, `${num(b.size)} bytes`)),
    b.value === undefined ? h('p', { class: 'muted' }, 'Not a dag-cbor map: its bytes are not shown.') : jsonView(b.value, did)]);
}

export { pail } from './pail.js';
