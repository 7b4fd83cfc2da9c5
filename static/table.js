// The dashboard's tables: column headers, sorting by any column that has a
// `sort` key (click: ascending, again: descending), and below 600 px stacked
// rows, each cell labelled by its column (style.css `table.stack`).
import { useState } from 'preact/hooks';
import { html } from './ui.js';

function compare(a, b) {
  if (a == null || a === '') return b == null || b === '' ? 0 : 1;
  if (b == null || b === '') return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// columns: [{key, label, render(row), sort?(row) -> value, className?}].
// `sort`: the initial {key, dir} (1 ascending, -1 descending); none keeps the
// rows' own order until a header is clicked.
export function Table({ columns, rows, rowKey, rowClass, rowAttrs, id, className = '', sort: initial = null, caption }) {
  const [sort, setSort] = useState(initial);
  const col = sort && columns.find((c) => c.key === sort.key && c.sort);
  const shown = col ? [...rows].sort((a, b) => compare(col.sort(a), col.sort(b)) * sort.dir) : rows;
  const click = (c) => setSort(sort && sort.key === c.key ? { key: c.key, dir: -sort.dir } : { key: c.key, dir: 1 });
  return html`<div class="table-wrap"><table id=${id} class=${`stack ${className}`}>
    ${caption && html`<caption class="sr">${caption}</caption>`}
    <thead><tr>${columns.map((c) => {
      const on = sort && sort.key === c.key;
      return html`<th scope="col" data-col=${c.key} class=${c.className || ''}
        aria-sort=${c.sort ? (on ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none') : undefined}>
        ${c.sort ? html`<button type="button" class="sort" onClick=${() => click(c)}>${c.label}<span aria-hidden="true" class="arrow">${on ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''}</span></button>` : c.label}</th>`;
    })}</tr></thead>
    <tbody>${shown.map((r) => html`<tr key=${rowKey(r)} class=${rowClass ? rowClass(r) : ''} ...${rowAttrs ? rowAttrs(r) : {}}>
      ${columns.map((c) => html`<td data-label=${c.label} data-col=${c.key} class=${c.className || ''}>${c.render(r)}</td>`)}
    </tr>`)}</tbody>
  </table></div>`;
}
