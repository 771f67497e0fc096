// ZeptoDB console: the SQL editor, the result grid (pages of a result the server keeps), the
// chart, the table list and the live ingest view. It talks to the same HTTP API as any client
// (POST /query?keep=1, GET /results/{id}, GET /tables, GET /metrics) with the key the user
// gave; data is only ever written into the page as text, never as markup.
(() => {
  'use strict';
  const Z = window.ZV;
  const $ = (id) => document.getElementById(id);
  const PAGE = 1000;          // rows per grid page
  const CHART_ROWS = 100000;  // rows a chart reads at most
  const POLL_MS = 2000;       // live view refresh
  const NUMERIC = /^(TINYINT|SMALLINT|INT|INTEGER|BIGINT|REAL|FLOAT|DOUBLE|DECIMAL(\(.*\))?)$/;
  const TEMPORAL = /^(TIMESTAMP|DATE)$/;
  const MAX_SERIES = 16;      // lines one chart draws at most
  const KEYWORDS = 'asof window splice sample latest fill xbar partition over rows range preceding following ' +
    'unbounded current row within tolerance using natural semi anti explain analyze copy checkpoint show ' +
    'describe tables settings vector symbol';
  const FUNCTIONS = 'xbar first last arg_min arg_max vwap ema sma wma deltas ratios mavg msum mmin mmax mdev mcount avg sum min max ' +
    'count stddev variance median percentile_cont row_number rank dense_rank lag lead now date_trunc ' +
    'cosine_similarity l2_distance';

  const ui = {
    key: sessionStorage.getItem('zepto.key') || localStorage.getItem('zepto.key') || '',
    result: null,     // {id, columns, total, offset, data, elapsedUs, notKept}
    tables: [],
    prevRows: new Map(),
    prevPoll: 0,
    prevMetrics: null,
    live: { t: [], rate: [] },
    liveChart: null,
    charts: [],
    running: false,
  };

  // ---- HTTP --------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super(body.message || ('HTTP ' + status));
      this.status = status;
      this.code = body.code || ('HTTP_' + status);
      this.line = body.line;
      this.column = body.column;
    }
  }

  // Big integers stay exact: a number JSON cannot hold as a double keeps its digits as text.
  const exactInts = (k, v, ctx) =>
    (typeof v === 'number' && !Number.isSafeInteger(v) && ctx && /^-?\d+$/.test(ctx.source)) ? ctx.source : v;

  /// A request with the key; a refused key opens the key dialog unless `quiet` (the
  /// background polls: the user asked for nothing).
  async function api(path, opts = {}, reviver, quiet) {
    const headers = Object.assign({}, opts.headers || {});
    if (ui.key) headers.Authorization = 'Bearer ' + ui.key;
    const resp = await fetch(path, Object.assign({}, opts, { headers }));
    const text = await resp.text();
    if (!resp.ok) {
      let body;
      try { body = JSON.parse(text).error || {}; } catch (_) { body = { message: text || resp.statusText }; }
      if (resp.status === 401 && !quiet) openKeyDialog();
      throw new ApiError(resp.status, body);
    }
    const type = resp.headers.get('content-type') || '';
    return type.startsWith('application/json') ? JSON.parse(text, reviver) : text;
  }

  // ---- editor ------------------------------------------------------------------------------

  const dialect = Z.SQLDialect.define(Object.assign({}, Z.PostgreSQL.spec || {}, {
    keywords: ((Z.PostgreSQL.spec && Z.PostgreSQL.spec.keywords) || '') + ' ' + KEYWORDS,
    builtin: ((Z.PostgreSQL.spec && Z.PostgreSQL.spec.builtin) || '') + ' ' + FUNCTIONS,
  }));
  const language = new Z.Compartment();
  const theme = new Z.Compartment();
  const sqlFor = (tables) => {
    const schema = {};
    for (const t of tables) schema[t.name] = t.columns.map((c) => c.name);
    return Z.sql({ dialect, schema, upperCaseKeywords: true });
  };

  const editor = new Z.EditorView({
    parent: $('editor'),
    state: Z.EditorState.create({
      doc: localStorage.getItem('zepto.sql') || 'SELECT 1',
      extensions: [
        Z.keymap.of([{ key: 'Mod-Enter', run: () => { runQuery(); return true; } }]),
        Z.lineNumbers(), Z.highlightActiveLineGutter(), Z.history(), Z.drawSelection(),
        Z.indentOnInput(), Z.bracketMatching(), Z.closeBrackets(), Z.autocompletion(),
        Z.highlightActiveLine(), Z.highlightSelectionMatches(), Z.lintGutter(), Z.EditorView.lineWrapping,
        Z.syntaxHighlighting(Z.defaultHighlightStyle, { fallback: true }),
        Z.keymap.of([...Z.closeBracketsKeymap, ...Z.defaultKeymap, ...Z.searchKeymap, ...Z.historyKeymap,
          ...Z.completionKeymap, Z.indentWithTab]),
        language.of(sqlFor([])),
        theme.of([]),
        Z.EditorView.updateListener.of((u) => {
          if (u.docChanged) localStorage.setItem('zepto.sql', u.state.doc.toString());
        }),
      ],
    }),
  });

  /// The SQL to run (the selection, else everything) and where it starts in the editor.
  function sqlToRun() {
    const sel = editor.state.selection.main;
    if (!sel.empty) return { text: editor.state.sliceDoc(sel.from, sel.to), from: sel.from };
    return { text: editor.state.doc.toString(), from: 0 };
  }

  /// An error's line and column (1-based, in the text sent) as an editor position.
  function errorPos(sent, line, column) {
    const doc = editor.state.doc;
    const start = doc.lineAt(sent.from);
    const lineNo = Math.min(doc.lines, start.number + line - 1);
    const l = doc.line(lineNo);
    // The server counts characters; the editor counts UTF-16 units (an emoji is two).
    const head = line === 1 ? sent.from - start.from : 0;
    const units = [...l.text.slice(head)].slice(0, Math.max(0, column - 1)).join('').length;
    return Math.min(l.to, l.from + head + units);
  }

  function markError(sent, err) {
    if (!err.line || !err.column) {
      editor.dispatch(Z.setDiagnostics(editor.state, []));
      return;
    }
    const from = errorPos(sent, err.line, err.column);
    const word = editor.state.wordAt(from);
    const to = word && word.from === from ? word.to : Math.min(editor.state.doc.length, from + 1);
    editor.dispatch(Z.setDiagnostics(editor.state, [{ from, to, severity: 'error', message: err.message }]),
      { selection: { anchor: from } });
  }

  // ---- running a query ---------------------------------------------------------------------

  const fmtInt = (n) => Number(n).toLocaleString('en-US');
  const fmtMs = (us) => (us >= 1e6 ? (us / 1e6).toFixed(2) + ' s' : (us / 1e3).toFixed(us < 1e4 ? 2 : 1) + ' ms');

  function setStatus(text, kind) {
    const s = $('status');
    s.textContent = text;
    s.className = 'status ' + (kind || '');
  }

  function showError(err) {
    const where = err.line && !/\bline \d+/.test(err.message) ? ` (line ${err.line}, column ${err.column})` : '';
    const box = $('error');
    box.textContent = `${err.code}: ${err.message}${where}`;
    box.hidden = false;
  }

  async function runQuery() {
    if (ui.running) return;
    const sent = sqlToRun();
    if (!sent.text.trim()) return;
    ui.running = true;
    $('run').disabled = true;
    $('error').hidden = true;
    setStatus('running…');
    const t0 = performance.now();
    forgetResult();
    pageTurn++;
    try {
      const r = await api(`/query?keep=1&limit=${PAGE}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ sql: sent.text }),
      }, exactInts);
      const wall = (performance.now() - t0) * 1e3;
      markError(sent, {});
      const kept = r.result || { id: null, total_rows: r.rows, offset: 0 };
      ui.result = {
        id: kept.id, columns: r.columns, total: kept.total_rows, offset: 0, data: r.data,
        elapsedUs: r.elapsed_us, notKept: kept.not_kept,
      };
      setStatus(`${fmtInt(kept.total_rows)} row${kept.total_rows === 1 ? '' : 's'} · ${fmtMs(r.elapsed_us)} on the server · ${fmtMs(wall)} in all`, 'ok');
      renderGrid();
      if (activeTab() === 'chart') renderChart().catch(showError);
      if (/^\s*(create|drop|insert|alter|copy)/i.test(sent.text)) loadTables();
    } catch (err) {
      if (!(err instanceof ApiError)) err = new ApiError(0, { code: 'NETWORK', message: String(err.message || err) });
      ui.result = null;
      renderGrid();
      showError(err);
      markError(sent, err);
      setStatus(err.code, 'bad');
    } finally {
      ui.running = false;
      $('run').disabled = false;
    }
  }

  function forgetResult(opts = {}) {
    if (ui.result && ui.result.id) {
      api('/results/' + ui.result.id, Object.assign({ method: 'DELETE' }, opts), undefined, true).catch(() => {});
    }
  }

  let pageTurn = 0; // the latest page asked for; an older answer arriving late is dropped

  async function goToPage(offset) {
    const r = ui.result;
    if (!r || !r.id) return;
    const off = Math.max(0, Math.min(offset, Math.max(0, r.total - 1)));
    const turn = ++pageTurn;
    try {
      const page = await api(`/results/${r.id}?offset=${off}&limit=${PAGE}`, {}, exactInts);
      if (turn !== pageTurn || ui.result !== r) return;
      Object.assign(r, { offset: page.result.offset, data: page.data });
      $('error').hidden = true;
      renderGrid();
    } catch (err) {
      if (turn === pageTurn && ui.result === r) showError(err);
    }
  }

  // ---- the grid ----------------------------------------------------------------------------

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  /// A cell as text: timestamps without the ISO "T" and "Z" (UTC throughout).
  function cellText(v, type) {
    if (v === null) return 'null';
    if (TEMPORAL.test(type) && typeof v === 'string') return v.replace('T', ' ').replace(/Z$/, '');
    if (Array.isArray(v)) return '[' + v.join(', ') + ']';
    return String(v);
  }

  function renderGrid() {
    const grid = $('grid');
    grid.replaceChildren();
    const r = ui.result;
    $('pager').hidden = !r || !r.id || r.total <= PAGE;
    if (!r) {
      grid.append(el('p', 'empty muted', 'Run a query to see its rows.'));
      return;
    }
    const table = el('table', 'grid');
    const head = el('tr');
    head.append(el('th', 'rownum', '#'));
    for (const c of r.columns) {
      const th = el('th', null, c.name);
      th.append(el('span', 'type', c.type.toLowerCase()));
      head.append(th);
    }
    const thead = el('thead');
    thead.append(head);
    table.append(thead);
    const body = el('tbody');
    const numeric = r.columns.map((c) => NUMERIC.test(c.type));
    r.data.forEach((row, i) => {
      const tr = el('tr');
      tr.append(el('td', 'rownum', fmtInt(r.offset + i + 1)));
      row.forEach((v, j) => {
        tr.append(el('td', v === null ? 'null' : (numeric[j] ? 'num' : null), cellText(v, r.columns[j].type)));
      });
      body.append(tr);
    });
    table.append(body);
    grid.append(table);
    if (r.notKept) grid.append(el('p', 'muted empty', `Only the first ${fmtInt(r.data.length)} rows: ${r.notKept}`));
    const last = Math.min(r.total, r.offset + r.data.length);
    $('range').textContent = `${fmtInt(r.total ? r.offset + 1 : 0)}–${fmtInt(last)} of ${fmtInt(r.total)}`;
    $('first').disabled = $('prev').disabled = r.offset === 0;
    $('next').disabled = $('last').disabled = last >= r.total;
    grid.scrollTop = 0;
  }

  // ---- the chart ---------------------------------------------------------------------------

  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const PALETTE = ['#4f8cff', '#f59e0b', '#10b981', '#ef4444', '#a855f7', '#06b6d4', '#ec4899', '#84cc16'];

  /// Seconds since the epoch (uPlot's time unit) of a cell: ISO text with up to 9 fraction
  /// digits (parsed here: Date keeps milliseconds), a date, or a number.
  function toSeconds(v) {
    if (v === null) return null;
    if (typeof v === 'number') return v;
    const m = /^(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d:\d\d)(?:\.(\d+))?)?Z?$/.exec(v);
    if (!m) return null;
    const base = Date.parse(m[1] + 'T' + (m[2] || '00:00:00') + 'Z') / 1e3;
    return m[3] ? base + Number('0.' + m[3]) : base;
  }

  function chartColumns(cols) {
    const by = (re) => cols.filter((c) => re.test(c.type)).map((c) => c.name);
    return { time: by(TEMPORAL), num: by(NUMERIC), cat: by(/^(SYMBOL|VARCHAR|TEXT|BOOLEAN)/) };
  }

  /// The open/high/low/close columns, if the result has them (any case; o/h/l/c too).
  function ohlc(cols) {
    const find = (...names) => cols.find((c) => names.includes(c.name.toLowerCase()));
    const o = find('open', 'o'), h = find('high', 'h'), l = find('low', 'l'), c = find('close', 'c');
    return o && h && l && c ? [o.name, h.name, l.name, c.name] : null;
  }

  function fillSelect(sel, names, chosen, none) {
    sel.replaceChildren();
    if (none) sel.append(new Option('(none)', ''));
    for (const n of names) sel.append(new Option(n, n, false, chosen.includes(n)));
  }

  let chartFor = null; // the result the controls were set up for

  function setUpControls(r) {
    const k = chartColumns(r.columns);
    const xs = k.time.length ? k.time : k.num;
    const candle = ohlc(r.columns);
    $('chart-kind').value = candle ? 'candle' : 'line';
    fillSelect($('chart-x'), xs, [xs[0]], false);
    // Series by the first text column, unless it has too many values to draw one line each.
    const byIdx = k.cat.length ? r.columns.findIndex((c) => c.name === k.cat[0]) : -1;
    const distinct = byIdx < 0 ? 0 : new Set(r.data.map((row) => row[byIdx])).size;
    fillSelect($('chart-by'), k.cat, distinct && distinct <= MAX_SERIES ? [k.cat[0]] : [], true);
    const ys = k.num.filter((n) => n !== xs[0]);
    fillSelect($('chart-y'), ys, ys.slice(0, 1), false);
    $('chart-y').size = Math.min(4, Math.max(1, ys.length));
    chartFor = r;
  }

  async function chartRows(r) {
    if (r.offset === 0 && r.data.length >= Math.min(r.total, CHART_ROWS)) return r.data;
    if (!r.id) return r.data;
    // One request however many renders ask while it runs.
    if (!r.chartData) r.chartData = api(`/results/${r.id}?offset=0&limit=${CHART_ROWS}`).then((p) => p.data);
    return r.chartData;
  }

  function destroyCharts() {
    for (const c of ui.charts) c.destroy();
    ui.charts = [];
    $('chart-area').replaceChildren();
  }

  let renders = 0; // a render that a later one overtook while it waited for rows gives way

  async function renderChart() {
    const turn = ++renders;
    const r = ui.result;
    const note = $('chart-note');
    if (!r || !r.columns.length) { destroyCharts(); note.textContent = 'Run a query to chart it.'; return; }
    if (chartFor !== r) setUpControls(r);
    $('chart-y-label').hidden = $('chart-kind').value === 'candle';
    const xName = $('chart-x').value;
    if (!xName) { destroyCharts(); note.textContent = 'Nothing to chart: the result has no timestamp or number column.'; return; }
    const rows = await chartRows(r);
    if (ui.result !== r || turn !== renders) return;
    destroyCharts();
    const idx = (n) => r.columns.findIndex((c) => c.name === n);
    const xi = idx(xName), bi = $('chart-by').value ? idx($('chart-by').value) : -1;
    const groups = new Map();
    let dropped = 0;
    for (const row of rows) {
      const g = bi < 0 ? '' : String(row[bi]);
      if (!groups.has(g)) {
        if (groups.size >= MAX_SERIES) { dropped++; continue; }
        groups.set(g, []);
      }
      groups.get(g).push(row);
    }
    note.textContent = `${fmtInt(rows.length)} rows` + (r.total > rows.length ? ` (the first ${fmtInt(rows.length)} of ${fmtInt(r.total)})` : '') +
      (dropped ? ` · the first ${MAX_SERIES} series (${fmtInt(dropped)} rows of others left out)` : '');
    const timeX = TEMPORAL.test(r.columns[xi].type);
    if ($('chart-kind').value === 'candle') {
      const names = ohlc(r.columns);
      if (!names) { note.textContent = 'A candlestick needs open, high, low and close columns (xbar bars).'; return; }
      let n = 0;
      for (const [g, gr] of groups) {
        if (n++ >= 8) { note.textContent += ' · candlesticks of the first 8'; break; }
        candleChart(g, gr, xi, names.map(idx), timeX);
      }
    } else {
      const ys = [...$('chart-y').selectedOptions].map((o) => o.value);
      if (!ys.length) { note.textContent = 'Pick a Y column.'; return; }
      lineChart(groups, xi, ys, ys.map(idx), timeX);
    }
  }

  function baseOpts(title, timeX) {
    const area = $('chart-area');
    const axis = { stroke: css('--muted'), grid: { stroke: css('--line'), width: 1 }, ticks: { stroke: css('--line') } };
    return {
      title, width: Math.max(300, area.clientWidth - 28), height: 340,
      scales: { x: { time: timeX } },
      axes: [Object.assign({}, axis), Object.assign({ size: 70 }, axis)],
      tzDate: (ts) => Z.uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      cursor: { drag: { x: true, y: false } },
    };
  }

  /// One series per (group, y column), on the union of the groups' x values.
  function lineChart(groups, xi, ys, yis, timeX) {
    const xsSet = new Set();
    for (const gr of groups.values()) for (const row of gr) xsSet.add(timeX ? toSeconds(row[xi]) : row[xi]);
    xsSet.delete(null);
    const xs = Float64Array.from(xsSet).sort();
    const at = new Map();
    xs.forEach((x, i) => at.set(x, i));
    const data = [xs];
    const series = [{}];
    let k = 0;
    for (const [g, gr] of groups) {
      yis.forEach((yi, j) => {
        const ys2 = new Array(xs.length).fill(null);
        for (const row of gr) {
          const x = timeX ? toSeconds(row[xi]) : row[xi];
          const v = row[yi];
          if (x !== null && v !== null) ys2[at.get(x)] = Number(v);
        }
        data.push(ys2);
        const label = g === '' ? ys[j] : (ys.length > 1 ? `${g} ${ys[j]}` : g);
        series.push({ label, stroke: PALETTE[k++ % PALETTE.length], width: 1.5, spanGaps: true, points: { show: xs.length < 200 } });
      });
    }
    const opts = Object.assign(baseOpts('', timeX), { series });
    ui.charts.push(new Z.uPlot(opts, data, $('chart-area')));
  }

  /// A candlestick chart of one group: bodies from open to close, wicks from low to high.
  function candleChart(g, rows, xi, [oi, hi, li, ci], timeX) {
    const sorted = rows.map((row) => [timeX ? toSeconds(row[xi]) : row[xi], row[oi], row[hi], row[li], row[ci]])
      .filter((v) => v[0] !== null).sort((a, b) => a[0] - b[0]);
    const col = (j) => sorted.map((v) => (v[j] === null ? null : Number(v[j])));
    const data = [Float64Array.from(sorted.map((v) => v[0])), col(1), col(2), col(3), col(4)];
    const hidden = (label) => ({ label, paths: () => null, points: { show: false }, stroke: css('--muted') });
    // Half a bar of room at each end, so the first and last candles are whole.
    const xs = data[0];
    const pad = xs.length > 1 ? (xs[xs.length - 1] - xs[0]) / (xs.length - 1) / 2 : 30;
    const base = baseOpts(g, timeX);
    base.scales.x.range = (u, mn, mx) => [mn - pad, mx + pad];
    const opts = Object.assign(base, {
      series: [{}, hidden('open'), hidden('high'), hidden('low'), hidden('close')],
      plugins: [{ hooks: { draw: [drawCandles] } }],
    });
    ui.charts.push(new Z.uPlot(opts, data, $('chart-area')));
  }

  function drawCandles(u) {
    const [xs, o, h, l, c] = u.data;
    const ctx = u.ctx;
    const up = css('--up'), down = css('--down');
    const [i0, i1] = [u.series[0].idxs ? u.series[0].idxs[0] : 0, u.series[0].idxs ? u.series[0].idxs[1] : xs.length - 1];
    const step = xs.length > 1 ? (u.valToPos(xs[Math.min(i0 + 1, xs.length - 1)], 'x', true) - u.valToPos(xs[i0], 'x', true)) : 10;
    const w = Math.max(1, Math.min(24, Math.abs(step) * 0.7));
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    for (let i = i0; i <= i1; i++) {
      if (o[i] === null || c[i] === null || h[i] === null || l[i] === null) continue;
      const x = u.valToPos(xs[i], 'x', true);
      const [yo, yc, yh, yl] = [o[i], c[i], h[i], l[i]].map((v) => u.valToPos(v, 'y', true));
      ctx.strokeStyle = ctx.fillStyle = c[i] >= o[i] ? up : down;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, yh);
      ctx.lineTo(Math.round(x) + 0.5, yl);
      ctx.stroke();
      ctx.fillRect(x - w / 2, Math.min(yo, yc), w, Math.max(1, Math.abs(yc - yo)));
    }
    ctx.restore();
  }

  // ---- tables and the live view ------------------------------------------------------------

  async function loadTables() {
    try {
      const r = await api('/tables');
      ui.tables = r.tables;
      editor.dispatch({ effects: language.reconfigure(sqlFor(ui.tables)) });
      renderTables();
      return r.tables;
    } catch (err) {
      const list = $('tables');
      list.replaceChildren(el('li', 'muted empty', err.status === 401 ? 'A key is needed (Key, above).' : err.message));
      return null;
    }
  }

  const open = new Set();

  function insertText(t) {
    const sel = editor.state.selection.main;
    editor.dispatch({ changes: { from: sel.from, to: sel.to, insert: t }, selection: { anchor: sel.from + t.length } });
    editor.focus();
  }

  function renderTables() {
    const list = $('tables');
    list.replaceChildren();
    if (!ui.tables.length) list.append(el('li', 'muted empty', 'No tables yet.'));
    for (const t of ui.tables) {
      const li = el('li');
      li.dataset.table = t.name;
      const name = el('div', 'name');
      name.append(el('span', 'caret', open.has(t.name) ? '▾' : '▸'), el('span', null, t.name),
        el('span', 'rate', ''), el('span', 'rows', fmtInt(t.rows)));
      name.title = 'Click: columns · double-click: insert the name';
      name.addEventListener('click', () => { open.has(t.name) ? open.delete(t.name) : open.add(t.name); renderTables(); });
      name.addEventListener('dblclick', () => insertText(t.name));
      li.append(name);
      if (open.has(t.name)) {
        const cols = el('ul');
        for (const c of t.columns) {
          const item = el('li');
          item.append(el('span', null, c.name), el('span', 'type', c.type.toLowerCase() + (c.role === 'designated timestamp' ? ' ⏱' : c.role ? ' 🔑' : '')));
          item.title = c.role || 'Click to insert';
          item.addEventListener('click', () => insertText(c.name));
          cols.append(item);
        }
        li.append(cols);
      }
      list.append(li);
    }
    showRates();
  }

  function showRates() {
    for (const li of $('tables').children) {
      const rate = ui.rates && ui.rates.get(li.dataset.table);
      const span = li.querySelector('.rate');
      if (span) span.textContent = rate ? fmtInt(Math.round(rate)) + '/s' : '';
    }
  }

  /// Rows/s per table from two readings of /tables; the server-wide numbers from /metrics.
  let polling = false;

  async function poll() {
    if (document.hidden || polling) return;
    polling = true;
    try { await pollOnce(); } finally { polling = false; }
  }

  async function pollOnce() {
    const now = performance.now() / 1e3;
    const tables = await loadTablesQuietly();
    if (tables) {
      const rates = new Map();
      let total = 0;
      for (const t of tables) {
        const before = ui.prevRows.get(t.name);
        if (before !== undefined && ui.prevPoll) {
          const r = Math.max(0, (t.rows - before) / (now - ui.prevPoll));
          rates.set(t.name, r);
          total += r;
        }
        ui.prevRows.set(t.name, t.rows);
        const known = ui.tables.find((x) => x.name === t.name);
        if (known) known.rows = t.rows;
      }
      const names = (ts) => ts.map((t) => t.name).join('\n');
      if (names(tables) !== names(ui.tables)) {
        ui.tables = tables;
        editor.dispatch({ effects: language.reconfigure(sqlFor(ui.tables)) });
        renderTables();
      }
      for (const li of $('tables').children) {
        const t = tables.find((x) => x.name === li.dataset.table);
        const rows = li.querySelector('.rows');
        if (t && rows) rows.textContent = fmtInt(t.rows);
      }
      ui.rates = rates;
      showRates();
      if (ui.prevPoll) { pushLive(Date.now() / 1e3, total); ui.ingestRate = total; }
      ui.prevPoll = now;
    }
    await pollMetrics(now);
  }

  async function loadTablesQuietly() {
    try { return (await api('/tables', {}, undefined, true)).tables; } catch (_) { return null; }
  }

  function pushLive(t, rate) {
    const L = ui.live;
    L.t.push(t); L.rate.push(rate);
    if (L.t.length > 90) { L.t.shift(); L.rate.shift(); }
    const host = $('live-chart');
    if (!ui.liveChart) {
      ui.liveChart = new Z.uPlot({
        width: host.clientWidth || 240, height: 80, legend: { show: false }, cursor: { show: false },
        scales: { x: { time: true } },
        axes: [{ show: false }, { stroke: css('--muted'), size: 44, grid: { stroke: css('--line') }, ticks: { show: false },
          values: (u, v) => v.map((x) => (x >= 1e6 ? (x / 1e6).toFixed(1) + 'M' : x >= 1e3 ? (x / 1e3).toFixed(0) + 'k' : x)) }],
        series: [{}, { stroke: css('--ok'), fill: 'rgba(34,197,94,.12)', width: 1.5, points: { show: false } }],
        tzDate: (ts) => Z.uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      }, [L.t, L.rate], host);
    } else {
      ui.liveChart.setData([L.t, L.rate]);
    }
  }

  /// `name{labels} value` lines of the OpenMetrics text, summed per name.
  function parseMetrics(text) {
    const sums = new Map();
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (m) sums.set(m[1], (sums.get(m[1]) || 0) + Number(m[3]));
    }
    return sums;
  }

  async function pollMetrics(now) {
    const dl = $('live');
    let m;
    try {
      m = parseMetrics(await api('/metrics', {}, undefined, true));
    } catch (err) {
      dl.replaceChildren(el('dt', null, 'metrics'), el('dd', 'muted', err.status === 403 ? 'need a key for all tables' : 'unavailable'));
      return;
    }
    const prev = ui.prevMetrics;
    const rate = (name) => (prev ? Math.max(0, ((m.get(name) || 0) - (prev.m.get(name) || 0)) / (now - prev.t)) : null);
    const rows = [
      ['rows in/s', ui.ingestRate === undefined ? null : ui.ingestRate],
      ['queries/s', rate('zepto_queries_total')],
      ['rows out/s', rate('zepto_rows_returned_total')],
      ['running', m.get('zepto_queries_running')],
      ['connections', m.get('zepto_connections_open')],
      ['memory', m.has('zepto_memory_resident_bytes') ? (m.get('zepto_memory_resident_bytes') / 2 ** 20).toFixed(0) + ' MiB' : null],
      ['errors', m.get('zepto_errors_total')],
    ];
    dl.replaceChildren();
    for (const [k, v] of rows) {
      dl.append(el('dt', null, k), el('dd', null, v === null || v === undefined ? '–' : typeof v === 'number' ? fmtInt(Math.round(v)) : v));
    }
    ui.prevMetrics = { t: now, m };
  }

  // ---- chrome: key, theme, tabs ------------------------------------------------------------

  function openKeyDialog() {
    const d = $('key-dialog');
    if (d.open) return;
    $('key-input').value = ui.key;
    $('key-remember').checked = !!localStorage.getItem('zepto.key');
    d.showModal();
  }

  function saveKey() {
    ui.key = $('key-input').value.trim();
    // The key lives as long as the tab, unless the user asks this browser to remember it.
    const keep = $('key-remember').checked;
    sessionStorage.removeItem('zepto.key');
    localStorage.removeItem('zepto.key');
    if (ui.key) (keep ? localStorage : sessionStorage).setItem('zepto.key', ui.key);
    $('key-dialog').close();
    loadTables();
    poll();
  }

  function applyTheme(t) {
    document.documentElement.dataset.theme = t;
    localStorage.setItem('zepto.theme', t);
    editor.dispatch({ effects: theme.reconfigure(t === 'dark' ? Z.oneDark : []) });
    if (ui.liveChart) { ui.liveChart.destroy(); ui.liveChart = null; }
    if (activeTab() === 'chart') renderChart().catch(showError);
  }

  const activeTab = () => document.querySelector('.tab.active').dataset.tab;

  function showTab(name) {
    for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === name);
    $('grid').hidden = name !== 'grid';
    $('chart').hidden = name !== 'chart';
    if (name === 'chart') renderChart().catch(showError);
  }

  function wire() {
    $('run').addEventListener('click', runQuery);
    $('first').addEventListener('click', () => goToPage(0));
    $('prev').addEventListener('click', () => goToPage(ui.result.offset - PAGE));
    $('next').addEventListener('click', () => goToPage(ui.result.offset + Math.max(1, ui.result.data.length)));
    $('last').addEventListener('click', () => goToPage(Math.floor((ui.result.total - 1) / PAGE) * PAGE));
    for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => showTab(b.dataset.tab));
    for (const id of ['chart-kind', 'chart-x', 'chart-by', 'chart-y']) {
      $(id).addEventListener('change', () => renderChart().catch(showError));
    }
    $('key-button').addEventListener('click', openKeyDialog);
    $('key-save').addEventListener('click', saveKey);
    $('key-cancel').addEventListener('click', () => $('key-dialog').close());
    $('key-input').addEventListener('keydown', (e) => { if (e.key === 'Enter') saveKey(); });
    $('theme').addEventListener('click', () => applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
    $('refresh').addEventListener('click', loadTables);
    window.addEventListener('resize', () => { if (activeTab() === 'chart') renderChart().catch(showError); });
    // A closed tab frees its kept result (keepalive lets the request outlive the page).
    window.addEventListener('pagehide', () => forgetResult({ keepalive: true }));
  }

  async function start() {
    wire();
    const dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
    applyTheme(localStorage.getItem('zepto.theme') || (dark ? 'dark' : 'light'));
    try {
      const h = await api('/health');
      $('server').textContent = `v${h.version} · ${location.host}`;
    } catch (_) {
      $('server').textContent = location.host;
    }
    await loadTables();
    await poll();
    setInterval(() => poll().catch(() => {}), POLL_MS);
    editor.focus();
    document.body.dataset.ready = '1';
  }

  start();
})();
