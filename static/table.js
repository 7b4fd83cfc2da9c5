// The dashboard's tables: column headers, sorting by any column that has a
// `sort` key (click: ascending, again: descending), and below 600 px stacked
// rows, each cell labelled by its column (style.css `table.stack`).
import { useState } from 'preact/hooks';
import { html } from './ui.js';

export function compare(a, b) {
  if (a == null || a === '') return b == null || b === '' ? 0 : 1;
  if (b == null || b === '') return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// The next sort after a click on column `key`: ascending, again: descending.
export function nextSort(sort, key) {
  return sort && sort.key === key ? { key, dir: -sort.dir } : { key, dir: 1 };
}

// `rows` in the order of `sort` ({key, dir}) by the column of that key (its
// `sort` function); unsorted (the rows' own order) when none matches.
export function sortRows(rows, columns, sort) {
  const col = sort && columns.find((c) => c.key === sort.key && c.sort);
  return col ? [...rows].sort((a, b) => compare(col.sort(a), col.sort(b)) * sort.dir) : rows;
}

// The arrow a sorted column shows.
export const arrow = (sort, key) => (sort && sort.key === key ? (sort.dir > 0 ? ' ▲' : ' ▼') : '');

// columns: [{key, label, render(row), sort?(row) -> value, className?}].
// `sort`: the initial {key, dir} (1 ascending, -1 descending); none keeps the
// rows' own order until a header is clicked.
export function Table({ columns, rows, rowKey, rowClass, rowAttrs, id, className = '', sort: initial = null, caption }) {
  const [sort, setSort] = useState(initial);
  const shown = sortRows(rows, columns, sort);
  const click = (c) => setSort(nextSort(sort, c.key));
  return html`<div class="table-wrap"><table id=${id} class=${`stack ${className}`}>
    ${caption && html`<caption class="sr">${caption}</caption>`}
    <thead><tr>${columns.map((c) => {
      const on = sort && sort.key === c.key;
      return html`<th scope="col" data-col=${c.key} class=${c.className || ''}
        aria-sort=${c.sort ? (on ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none') : undefined}>
        ${c.sort ? html`<button type="button" class="sort" onClick=${() => click(c)}>${c.label}<span aria-hidden="true" class="arrow">${arrow(sort, c.key)}</span></button>` : c.label}</th>`;
    })}</tr></thead>
    <tbody>${shown.map((r) => html`<tr key=${rowKey(r)} class=${rowClass ? rowClass(r) : ''} ...${rowAttrs ? rowAttrs(r) : {}}>
      ${columns.map((c) => html`<td data-label=${c.label} data-col=${c.key} class=${c.className || ''}>${c.render(r)}</td>`)}
    </tr>`)}</tbody>
  </table></div>`;
}
