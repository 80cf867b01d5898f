// Records drawn as formatted JSON: `{"$link": cid}` and `at://` URIs
// become links, long strings are cut with a way to see them whole.

import { h, a, repoPath, truncated } from './dom.js';
import { blobUrl } from './api.js';

const LONG = 300;

/** The interface path an `at://repo/collection/rkey` URI names, or null. */
export function atUriPath(uri) {
  const m = /^at:\/\/([^/?#]+)(?:\/([^/?#]+)(?:\/([^/?#]+))?)?$/.exec(uri);
  if (!m) return null;
  const [, repo, collection, rkey] = m;
  return repoPath(repo, ...[collection, rkey].filter(Boolean));
}

/** A `<pre>` with `value` as indented JSON. `did` resolves `$link`s. */
export function jsonView(value, did) {
  const pre = h('pre', { class: 'json' });
  write(pre, value, '', did);
  return pre;
}

function write(out, v, indent, did) {
  if (v === null) return out.append(h('span', { class: 'j-null' }, 'null'));
  if (Array.isArray(v)) {
    if (v.length === 0) return out.append('[]');
    out.append('[\n');
    v.forEach((item, i) => {
      out.append(`${indent}  `);
      write(out, item, `${indent}  `, did);
      out.append(i + 1 < v.length ? ',\n' : '\n');
    });
    return out.append(`${indent}]`);
  }
  if (typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$link' && typeof v.$link === 'string') {
      // A blob's CID (codec raw: `bafkrei…`) names bytes, not a block.
      const href = v.$link.startsWith('bafkrei') ? blobUrl(did, v.$link) : repoPath(did, 'block', v.$link);
      out.append('{"$link": ');
      out.append(h('a', { class: 'j-str', href }, JSON.stringify(v.$link)));
      return out.append('}');
    }
    if (keys.length === 0) return out.append('{}');
    out.append('{\n');
    keys.forEach((k, i) => {
      out.append(`${indent}  `, h('span', { class: 'j-key' }, JSON.stringify(k)), ': ');
      write(out, v[k], `${indent}  `, did);
      out.append(i + 1 < keys.length ? ',\n' : '\n');
    });
    return out.append(`${indent}}`);
  }
  if (typeof v === 'string') {
    const path = v.startsWith('at://') ? atUriPath(v) : null;
    if (path) return out.append(h('a', { class: 'j-str', href: path }, JSON.stringify(v)));
    const text = JSON.stringify(v);
    return out.append(h('span', { class: 'j-str' }, truncated(text, LONG)));
  }
  return out.append(h('span', { class: typeof v === 'number' ? 'j-num' : 'j-bool' }, JSON.stringify(v)));
}

/** A one-line preview of a record's fields for tables. */
export function preview(value, max = 140) {
  if (!value || typeof value !== 'object') return JSON.stringify(value);
  const parts = [];
  for (const [k, v] of Object.entries(value)) {
    if (k === '$type') continue;
    let s;
    if (typeof v === 'string') s = JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
    else if (Array.isArray(v)) {
      // Scalars shown (as many as fit), objects counted.
      const text = JSON.stringify(v);
      s = v.every((x) => x === null || typeof x !== 'object')
        ? (text.length > 60 ? `${text.slice(0, 60)}…` : text)
        : `[${v.length} items]`;
    }
    else if (v && typeof v === 'object') s = '{…}';
    else s = JSON.stringify(v);
    parts.push(`${k}: ${s}`);
  }
  const text = parts.join(', ');
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
