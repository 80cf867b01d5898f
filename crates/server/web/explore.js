// Looking at a collection through its indexes: chosen columns, a bar chart
// of a datetime index (dev.datarepo.aggregateRecords `histogram`) and
// counts per value of a keyword index (`groupBy`, with an integer field's
// stats). Everything is drawn from data with `h`, never from markup.

import * as api from './api.js';
import { h, num, loading, fill } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/** The values at a dotted path of a record (arrays entered), as the indexes read them. */
export function valuesAt(value, path) {
  let current = [value];
  for (const key of path.split('.')) {
    const next = [];
    for (const v of current) {
      if (v && typeof v === 'object' && !Array.isArray(v) && key in v) {
        const child = v[key];
        if (Array.isArray(child)) next.push(...child);
        else next.push(child);
      }
    }
    current = next;
  }
  return current;
}

/** A table cell's text for the value at `path` of a record. */
export function cellText(value, path) {
  const values = valuesAt(value, path).filter((v) => v !== undefined);
  if (!values.length) return '';
  const text = values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** The chosen columns: `fields=a,b.c`, each a path. */
export function parseFields(text) {
  return (text || '').split(',').map((f) => f.trim()).filter(Boolean);
}

const INTERVALS = [['1h', 'hour'], ['1d', 'day'], ['1w', 'week'], ['1mo', 'month'], ['1y', 'year']];

/**
 * A bar chart of how many matching records fall in each bucket of the
 * datetime index at `path`: a small inline SVG, one bar per bucket (empty
 * ones included, as the API gives them), each with its start and count as
 * its title.
 */
export function histogram({ did, collection, where, paths }) {
  const select = (options, onchange) => h('select', { onchange }, options.map(([v, label]) => h('option', { value: v }, label)));
  const chart = h('div', { class: 'chart' }, loading());
  let path = paths[0];
  let interval = '1d';
  const draw = () => fill(chart, api.get('dev.datarepo.aggregateRecords',
    { repo: did, collection, where, histogram: path, interval }), (res) => bars(res.buckets, path, interval));
  const pathSelect = select(paths.map((p) => [p, p]), (e) => { path = e.target.value; draw(); });
  const intervalSelect = select(INTERVALS.map(([v, label]) => [v, `per ${label}`]), (e) => { interval = e.target.value; draw(); });
  intervalSelect.value = interval;
  draw();
  return h('figure', { class: 'histogram', dataset: { histogram: '' } },
    h('figcaption', {}, 'Records by ', paths.length > 1 ? pathSelect : h('code', {}, path), ' ', intervalSelect),
    chart);
}

function bars(buckets, path, interval) {
  if (!buckets.length) return h('p', { class: 'muted' }, `No values of ${path}.`);
  if (buckets.length > 2000) return h('p', { class: 'muted' }, `${num(buckets.length)} buckets: choose a longer interval.`);
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const width = 600;
  const height = 120;
  const step = width / buckets.length;
  const g = svg('g');
  buckets.forEach((b, i) => {
    const barHeight = b.count ? Math.max(1, (b.count / max) * (height - 2)) : 0;
    g.append(svg('rect', {
      x: (i * step).toFixed(2), y: (height - barHeight).toFixed(2),
      width: Math.max(0.5, step - (step > 3 ? 1 : 0)).toFixed(2), height: barHeight.toFixed(2),
      'data-start': b.start, 'data-count': b.count,
    }, svg('title', {}, `${b.start}: ${num(b.count)}`)));
  });
  const label = (text, x, anchor) => svg('text', { x, y: height + 14, 'text-anchor': anchor }, text);
  return svg('svg', {
    viewBox: `0 0 ${width} ${height + 18}`, role: 'img', class: 'bars',
    'aria-label': `${buckets.length} buckets of ${interval} from ${buckets[0].start}, at most ${max} records`,
  }, g, label(String(buckets[0].start), 0, 'start'), label(String(buckets[buckets.length - 1].start), width, 'end'));
}

/**
 * Counts per value of a keyword index among the matching records (a record
 * in each of its values' groups), with the sum, mean, min and max of an
 * integer index per group when one is chosen.
 */
export function groups({ did, collection, where, keywords, integers }) {
  const out = h('div', { class: 'groups' });
  const by = h('select', { 'aria-label': 'Group by' }, keywords.map((p) => h('option', { value: p }, p)));
  const stat = h('select', { 'aria-label': 'Statistics of' }, h('option', { value: '' }, '(count only)'),
    integers.map((p) => h('option', { value: p }, p)));
  const show = () => {
    const stats = stat.value || undefined;
    fill(out, api.get('dev.datarepo.aggregateRecords', { repo: did, collection, where, groupBy: by.value, stats, limit: 50 }), (res) => {
      if (!res.groups.length) return h('p', { class: 'muted' }, 'No values.');
      const head = ['Value', 'Records', ...(stats ? [`sum ${stats}`, 'avg', 'min', 'max'] : [])];
      return h('table', { class: 'group-table' },
        h('thead', {}, h('tr', {}, head.map((t) => h('th', {}, t)))),
        h('tbody', {}, res.groups.map((g) => h('tr', { dataset: { group: JSON.stringify(g.key) } },
          h('td', {}, g.key.map((k) => (typeof k === 'string' ? k : JSON.stringify(k))).join(' · ')),
          h('td', { class: 'n' }, num(g.count)),
          ...(stats && g.stats ? [g.stats.sum, g.stats.avg, g.stats.min, g.stats.max]
            .map((v) => h('td', { class: 'n' }, v === null || v === undefined ? '—' : num(typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(2)) : v))) : []),
        ))));
    });
  };
  by.onchange = show;
  stat.onchange = show;
  const details = h('details', { class: 'group-by', dataset: { groupBy: '' } },
    h('summary', {}, 'Group by'), h('p', {}, by, ' ', stat), out);
  let shown = false;
  details.addEventListener('toggle', () => { if (details.open && !shown) { shown = true; show(); } });
  return details;
}
