// The inline stylesheet and script of report.html.
#pragma once

namespace acc::analyzer {

inline constexpr const char* kReportCss = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 0; color: #1d1f23; background: #f6f7f9; }
main { max-width: 1360px; margin: 0 auto; padding: 14px 20px 40px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 8px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
section { background: #fff; border: 1px solid #dde0e5; border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
.dirs { color: #555; font-size: 13px; }
.dirs code, td code { font: 12px/1.3 "DejaVu Sans Mono", monospace; }
#verdict.fail { border-left: 6px solid #d62728; }
#verdict.warn { border-left: 6px solid #e0a800; }
#verdict.pass { border-left: 6px solid #2ca02c; }
#verdict h2 { font-size: 19px; }
#verdict .headline-name { font-family: "DejaVu Sans Mono", monospace; }
.kv { border-collapse: collapse; margin: 6px 0; }
.kv th { text-align: left; font-weight: 600; padding: 1px 14px 1px 0; color: #444; vertical-align: top; }
.kv td { padding: 1px 18px 1px 0; }
.counts { color: #444; margin-top: 8px; }
.stack { font: 12px/1.4 "DejaVu Sans Mono", monospace; margin: 4px 0; padding-left: 28px; }
.stack li.native { color: #666; }
.note { color: #666; font-size: 13px; }
#plot svg { width: 100%; height: auto; display: block; }
#plot .grid { stroke: #e6e8eb; }
#plot .frame { fill: none; stroke: #9aa0a6; }
#plot .tickmark { stroke: #9aa0a6; }
#plot .tick, #plot .legend text, #plot .boundary-label { font-size: 11px; fill: #555; }
#plot .label { font-size: 12px; fill: #333; }
#plot .boundary { stroke: #c9ccd1; stroke-dasharray: 2 3; }
#plot .fwd { fill: #1f77b4; }
#plot .bwd { fill: #ff7f0e; }
#plot .nocmp { fill: #fff; stroke: #999; }
#plot .mark { cursor: pointer; }
#plot .mark.is-origin { stroke: #d62728; stroke-width: 2; }
#plot .origin-line { stroke: #d62728; stroke-width: 1.5; stroke-dasharray: 5 3; }
#plot .origin-head { fill: #d62728; }
#plot .origin-label { font-size: 12px; font-weight: 600; fill: #d62728; }
table.data { border-collapse: collapse; font-size: 12px; width: 100%; }
table.data th, table.data td { border-bottom: 1px solid #eceef1; padding: 2px 6px; text-align: left; white-space: nowrap; }
table.data th { background: #eef0f3; position: sticky; top: 0; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.data tr.fail td { background: #ffc7ce; }
table.data tr.warn td { background: #fff2cc; }
table.data tr.origin td { font-weight: 600; }
table.stats td.d1 { background: #f3f6fb; }
table.stats td.differs { color: #b3261e; font-weight: 600; }
#pairs th { cursor: pointer; user-select: none; }
#pairs th.sorted-asc::after { content: " \25B2"; }
#pairs th.sorted-desc::after { content: " \25BC"; }
.controls { display: flex; gap: 12px; align-items: center; margin-bottom: 8px; flex-wrap: wrap; }
.controls input[type=search] { width: 260px; }
.table-wrap { overflow: auto; max-height: 640px; border: 1px solid #eceef1; }
table.gradmap { border-collapse: collapse; font-size: 11px; }
table.gradmap th { font-weight: normal; text-align: right; padding: 0 6px; white-space: nowrap; }
table.gradmap thead th { text-align: left; padding: 0 1px; font-size: 9px; color: #666; }
table.gradmap td { width: 12px; height: 12px; border: 1px solid #fff; background: #e6f4ea; }
table.gradmap td.warn { background: #ffe699; }
table.gradmap td.fail { background: #e06666; }
table.gradmap td.none { background: #f3f4f6; }
)CSS";

inline constexpr const char* kReportJs = R"JS(
(function () {
  'use strict';
  var plot = document.getElementById('error-plot');
  function recordLayout() {  // where the plot is, for automated checks of screenshots
    if (!plot) return;
    var r = plot.getBoundingClientRect();
    plot.setAttribute('data-layout', [r.left, r.top, r.width, r.height].map(Math.round).join(','));
  }
  recordLayout();
  window.addEventListener('resize', recordLayout);

  var source = document.getElementById('pairs-data');
  if (!source) return;
  var data = JSON.parse(source.textContent);
  var cols = data.columns, types = data.types, rows = data.rows;
  var PAGE = 500;
  var vcol = cols.indexOf('verdict'), ocol = cols.indexOf('origin');
  var ncol = cols.indexOf('name'), pcol = cols.indexOf('op');
  var table = document.getElementById('pairs'), tbody = table.tBodies[0];
  var filter = document.getElementById('pairs-filter'), only = document.getElementById('pairs-verdict');
  var info = document.getElementById('pairs-info');
  var view = [], page = 0, sortCol = -1, sortDir = 1;

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function num(v) {
    if (typeof v === 'number') return v;
    if (v === 'inf') return Infinity;
    if (v === '-inf') return -Infinity;
    return NaN;  // empty, nan
  }
  function show(v, t) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number' && t === 'n' && v !== 0) {
      var a = Math.abs(v);
      var text = a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(5) : v.toPrecision(6);
      return text.replace(/\.?0+(e|$)/, '$1');
    }
    return String(v);
  }

  var head = table.tHead.rows[0];
  cols.forEach(function (c, i) {
    var th = document.createElement('th');
    th.textContent = c;
    th.title = 'sort by ' + c;
    th.addEventListener('click', function () {
      if (sortCol === i) sortDir = -sortDir; else { sortCol = i; sortDir = 1; }
      apply();
    });
    head.appendChild(th);
  });

  function apply() {
    var q = filter.value.trim().toLowerCase(), want = only.value;
    view = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (want === 'notpass' ? r[vcol] === 'pass' : want && r[vcol] !== want) continue;
      if (q && String(r[ncol]).toLowerCase().indexOf(q) < 0 && String(r[pcol]).toLowerCase().indexOf(q) < 0) continue;
      view.push(i);
    }
    if (sortCol >= 0) {
      var c = sortCol, d = sortDir;
      if (types[c] === 't') {
        view.sort(function (a, b) {
          var x = rows[a][c] || '', y = rows[b][c] || '';
          return x < y ? -d : x > y ? d : a - b;
        });
      } else {
        view.sort(function (a, b) {
          var x = num(rows[a][c]), y = num(rows[b][c]), nx = isNaN(x), ny = isNaN(y);
          if (nx || ny) return nx && ny ? a - b : nx ? 1 : -1;  // unknown values last
          return x < y ? -d : x > y ? d : a - b;
        });
      }
    }
    Array.prototype.forEach.call(head.cells, function (th, i) {
      th.className = i === sortCol ? (sortDir > 0 ? 'sorted-asc' : 'sorted-desc') : '';
    });
    page = 0;
    render();
  }

  function render() {
    var start = page * PAGE, end = Math.min(view.length, start + PAGE), html = [];
    for (var k = start; k < end; k++) {
      var r = rows[view[k]];
      var cls = r[vcol] + (ocol >= 0 && r[ocol] ? ' origin' : '');
      var cells = r.map(function (v, i) {
        return '<td' + (types[i] === 't' ? '' : ' class="num"') + '>' + esc(show(v, types[i])) + '</td>';
      });
      html.push('<tr class="' + cls + '">' + cells.join('') + '</tr>');
    }
    tbody.innerHTML = html.join('');
    info.textContent = view.length ? 'rows ' + (start + 1) + '\u2013' + end + ' of ' + view.length +
        (view.length < rows.length ? ' (filtered from ' + rows.length + ')' : '') : 'no rows';
    document.getElementById('pairs-prev').disabled = page === 0;
    document.getElementById('pairs-next').disabled = end >= view.length;
  }

  document.getElementById('pairs-prev').addEventListener('click', function () { page--; render(); });
  document.getElementById('pairs-next').addEventListener('click', function () { page++; render(); });
  filter.addEventListener('input', apply);
  only.addEventListener('change', apply);
  if (plot) {
    plot.addEventListener('click', function (e) {
      var t = e.target.closest ? e.target.closest('.mark') : null;
      if (!t) return;
      filter.value = t.textContent.split('\n')[0];
      only.value = '';
      apply();
      document.getElementById('table').scrollIntoView();
    });
  }
  apply();
})();
)JS";

}  // namespace acc::analyzer
