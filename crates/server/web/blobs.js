// Blobs a record refers to, shown: images as lazy-loaded thumbnails (each
// a link to the whole image), other files as a download link with their
// type and size. Bytes come from `com.atproto.sync.getBlob`.

import { h } from './dom.js';
import * as api from './api.js';

/**
 * Every blob reference in `value` (`{$type: "blob", ref: {$link}, mimeType,
 * size}`), in the order met, each once: `{cid, mimeType, size, alt}`, where
 * `alt` is the text an `{alt, image}` object (a post's image) gives it.
 */
export function blobRefs(value) {
  const found = new Map();
  const walk = (v, alt) => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, undefined));
    if (!v || typeof v !== 'object') return;
    if (v.$type === 'blob' && v.ref && typeof v.ref.$link === 'string') {
      if (!found.has(v.ref.$link)) {
        found.set(v.ref.$link, { cid: v.ref.$link, mimeType: String(v.mimeType || ''), size: v.size, alt });
      }
      return;
    }
    const altHere = typeof v.alt === 'string' ? v.alt : undefined;
    for (const x of Object.values(v)) walk(x, altHere);
  };
  walk(value, undefined);
  return [...found.values()];
}

/** Whether a browser shows blob `ref` as an image. */
export const isImage = (ref) => /^image\/(png|jpeg|gif|webp|avif|bmp)$/.test(ref.mimeType);

/**
 * An `<img>` of blob `ref` of `did`, loaded when it scrolls into view. A
 * server with `--private-reads` refuses the plain request: the image is
 * then fetched with this page's credentials.
 */
export function blobImage(did, ref, cls) {
  const img = h('img', {
    src: api.blobUrl(did, ref.cid),
    alt: ref.alt || '',
    class: cls,
    loading: 'lazy',
    decoding: 'async',
    dataset: { cid: ref.cid },
  });
  img.addEventListener('error', () => {
    if (!api.hasCredentials()) return;
    api.fetchBlob(did, ref.cid).then(
      (bytes) => { img.src = URL.createObjectURL(bytes); },
      () => { img.classList.add('broken'); });
  }, { once: true });
  return img;
}

function size(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** Blob `ref` of `did`: an image's thumbnail, else a download link. */
export function blobView(did, ref) {
  const href = api.blobUrl(did, ref.cid);
  const facts = [ref.mimeType || 'unknown type', size(ref.size)].filter(Boolean).join(', ');
  if (isImage(ref)) {
    return h('figure', { class: 'blob' },
      h('a', { href, target: '_blank', rel: 'noopener' }, blobImage(did, ref, 'thumb')),
      h('figcaption', {}, ref.alt ? `${ref.alt} · ${facts}` : facts));
  }
  return h('p', { class: 'blob' },
    h('a', { href, download: ref.cid, dataset: { cid: ref.cid } }, `Download ${ref.cid.slice(0, 16)}…`),
    ' ', h('span', { class: 'muted' }, facts));
}

/** The first image blob of `value` as a small preview, or null. */
export function previewImage(did, value) {
  const ref = blobRefs(value).find(isImage);
  return ref ? blobImage(did, ref, 'mini') : null;
}
