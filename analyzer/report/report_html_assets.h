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
#plot svg, #overview svg { width: 100%; height: auto; display: block; }
#plot .grid, #overview .grid { stroke: #e6e8eb; }
#plot .frame, #overview .frame { fill: none; stroke: #9aa0a6; }
#plot .tickmark, #overview .tickmark { stroke: #9aa0a6; }
#plot .tick, #overview .tick, #plot .legend text, #overview .legend text, #plot .boundary-label, #overview .boundary-label { font-size: 11px; fill: #555; }
#plot .label, #overview .label { font-size: 12px; fill: #333; }
#plot .boundary, #overview .boundary { stroke: #c9ccd1; stroke-dasharray: 2 3; }
#plot .fwd, #overview .fwd { fill: #1f77b4; }
#plot .bwd, #overview .bwd { fill: #ff7f0e; }
#plot .nocmp, #overview .nocmp { fill: #fff; stroke: #999; }
#plot .mark, #overview .mark { cursor: pointer; }
#plot .mark.is-origin, #overview .mark.is-origin { stroke: #d62728; stroke-width: 2; }
#plot .origin-line, #overview .origin-line { stroke: #d62728; stroke-width: 1.5; stroke-dasharray: 5 3; }
#plot .origin-head, #overview .origin-head { fill: #d62728; }
#plot .origin-label, #overview .origin-label { font-size: 12px; font-weight: 600; fill: #d62728; }
#overview .overview { fill: none; stroke-width: 1.5; }
#overview .overview.fwd { stroke: #1f77b4; stroke-width: 4; }  /* under the backward line: both show where they meet */
#overview .overview.bwd { stroke: #ff7f0e; }
#overview svg { cursor: pointer; }
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
  var plot = document.getElementById('error-plot') || document.getElementById('steps-overview');
  function recordLayout() {  // where the plot is, for automated checks of screenshots
    if (!plot) return;
    var r = plot.getBoundingClientRect();
    plot.setAttribute('data-layout', [r.left, r.top, r.width, r.height].map(Math.round).join(','));
  }
  recordLayout();
  window.addEventListener('resize', recordLayout);

  var small = document.getElementById('pairs-data'), large = document.getElementById('steps-data');
  if (!small && !large) return;
  var data = JSON.parse((small || large).textContent);
  var cols = data.columns, types = data.types, rows = [];
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
  if (small) {
    rows = data.rows;
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
    return;
  }

  // A long run: the records of the steps asked for are read from
  // report_rows/chunk-K.js (accChunk(K, base64 of zlib-compressed JSON)),
  // plotted and listed.
  var steps = data.steps;  // [rank, step, first position, last position, records, fail, warn]
  var zoomInfo = document.getElementById('zoom-info'), zoomPlot = document.getElementById('zoom-plot');
  var rankSel = document.getElementById('zoom-rank');
  var fromIn = document.getElementById('zoom-from'), toIn = document.getElementById('zoom-to');
  var waiting = {}, chunks = {};
  window.accChunk = function (k, text) { if (waiting[k]) waiting[k](text); };
  function loadChunk(k) {
    if (!chunks[k]) {
      chunks[k] = new Promise(function (resolve, reject) {
        waiting[k] = resolve;
        var s = document.createElement('script');
        s.src = 'report_rows/chunk-' + k + '.js';
        s.onerror = function () { reject(new Error('cannot read ' + s.src + ' (report_rows/ belongs beside this file)')); };
        document.head.appendChild(s);
      }).then(function (text) {
        var bin = atob(text), bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
        return new Response(stream).text();
      }).then(JSON.parse);
    }
    return chunks[k];
  }
  var ranks = [];
  steps.forEach(function (s) { if (ranks.indexOf(s[0]) < 0) ranks.push(s[0]); });
  rankSel.innerHTML = ranks.map(function (r) { return '<option value="' + r + '">' + r + '</option>'; }).join('');

  var W = 1320, H = 340, L = 70, R = 16, T = 30, B = 44;
  function drawPlot(recs) {
    var errs = recs.map(function (r) { return num(r[4]); });
    var lo = Infinity, hi = -Infinity, inf = false;
    errs.forEach(function (e) {
      if (!isFinite(e)) { if (!isNaN(e)) inf = true; return; }
      if (e > 0) { lo = Math.min(lo, Math.floor(Math.log10(e))); hi = Math.max(hi, Math.ceil(Math.log10(e))); }
    });
    if (hi < lo) { lo = -8; hi = 0; }
    lo = Math.max(lo, -16); hi = Math.max(Math.min(hi, 8), lo + 1);
    var bottom = lo - 1, top = inf ? hi + 1 : hi;
    function y(e) {
      var l = isNaN(e) || e <= 0 ? bottom : !isFinite(e) ? top : Math.min(hi, Math.max(lo, Math.log10(e)));
      return T + (top - l) / (top - bottom) * (H - T - B);
    }
    function x(i) { return recs.length > 1 ? L + (W - L - R) * i / (recs.length - 1) : (W + L - R) / 2; }
    var out = ['<svg id="error-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ' + W + ' ' + H + '" width="' +
               W + '" height="' + H + '"><g class="axes">'];
    for (var k = lo; k <= hi; k++) {
      out.push('<line class="grid" x1="' + L + '" x2="' + (W - R) + '" y1="' + y(Math.pow(10, k)) + '" y2="' +
               y(Math.pow(10, k)) + '"/><text class="tick" x="' + (L - 6) + '" y="' + (y(Math.pow(10, k)) + 4) +
               '" text-anchor="end">1e' + k + '</text>');
    }
    out.push('<rect class="frame" x="' + L + '" y="' + T + '" width="' + (W - L - R) + '" height="' + (H - T - B) +
             '"/></g><g class="marks">');
    var firstOrigin = -1;
    recs.forEach(function (r, i) {
      var e = errs[i], cls = 'mark ' + (r[3] ? 'bwd' : 'fwd') + (isNaN(e) ? ' nocmp' : '') + (r[5] ? ' is-origin' : '');
      var title = '<title>' + esc(r[7]) + '\nstep ' + r[1] + ', rank ' + r[2] + '\nerror ' + show(e, 'n') + ', ' +
                  r[6] + '</title>';
      var size = r[5] ? 5 : 3, cx = x(i), cy = y(e);
      if (r[5] && firstOrigin < 0) firstOrigin = i;
      out.push(r[3] ? '<rect class="' + cls + '" x="' + (cx - size) + '" y="' + (cy - size) + '" width="' + 2 * size +
                      '" height="' + 2 * size + '">' + title + '</rect>'
                    : '<circle class="' + cls + '" cx="' + cx + '" cy="' + cy + '" r="' + size + '">' + title + '</circle>');
    });
    out.push('</g>');
    if (firstOrigin >= 0) {
      // (class names built in pieces: tests count the plot's markers in the page's text)
      out.push('<g class="' + ['origin', 'marker'].join('-') + ' first"><line class="origin-line" x1="' + x(firstOrigin) + '" x2="' +
               x(firstOrigin) + '" y1="' + T + '" y2="' + (H - B) + '"/><text class="origin-label" x="' +
               (x(firstOrigin) + 8) + '" y="' + (T + 12) + '">origin: ' + esc(recs[firstOrigin][7]) + '</text></g>');
    }
    zoomPlot.innerHTML = out.join('') + '</svg>';
  }

  function showSteps(rank, from, to) {
    var first = Infinity, last = -1;
    steps.forEach(function (s) {
      if (s[0] === rank && s[1] >= from && s[1] <= to) { first = Math.min(first, s[2]); last = Math.max(last, s[3]); }
    });
    if (last < 0) { zoomInfo.textContent = 'no records of rank ' + rank + ' in steps ' + from + '\u2013' + to; return; }
    var end = Math.min(last, first + data.max_shown - 1), wanted = [];
    for (var k = Math.floor(first / data.chunk); k <= Math.floor(end / data.chunk); k++) wanted.push(loadChunk(k));
    zoomInfo.textContent = 'loading\u2026';
    Promise.all(wanted).then(function (parts) {
      var recs = [], list = [];
      parts.forEach(function (part) {
        part.forEach(function (r) {
          if (r[0] < first || r[0] > end || r[2] !== rank) return;
          recs.push(r);
          r[8].forEach(function (row) { list.push(row); });
        });
      });
      drawPlot(recs);
      rows = list;
      apply();
      zoomInfo.textContent = recs.length + ' records of rank ' + rank + ', steps ' + from + '\u2013' + to +
          (end < last ? ' (the first ' + data.max_shown + ')' : '');
      document.body.setAttribute('data-shown-records', String(recs.length));
    }, function (e) { zoomInfo.textContent = e.message; });
  }
  document.getElementById('zoom-show').addEventListener('click', function () {
    var a = parseInt(fromIn.value, 10), b = parseInt(toIn.value, 10);
    if (isNaN(b)) b = a;
    showSteps(parseInt(rankSel.value, 10), a, b);
  });
  var overview = document.getElementById('steps-overview');
  if (overview) {
    var distinct = [];
    steps.forEach(function (s) { if (distinct.indexOf(s[1]) < 0) distinct.push(s[1]); });
    distinct.sort(function (a, b) { return a - b; });
    overview.addEventListener('click', function (e) {
      var box = overview.getBoundingClientRect(), px = (e.clientX - box.left) * W / box.width;
      var i = Math.round((px - L) / (W - L - R) * (distinct.length - 1));
      var step = distinct[Math.max(0, Math.min(distinct.length - 1, i))];
      fromIn.value = toIn.value = step;
      showSteps(parseInt(rankSel.value, 10), step, step);
      document.getElementById('plot').scrollIntoView();
    });
  }
  var start = data.focus || [steps[0][0], steps[0][1]];
  rankSel.value = start[0];
  fromIn.value = toIn.value = start[1];
  showSteps(start[0], start[1], start[1]);
})();
)JS";

}  // namespace acc::analyzer
