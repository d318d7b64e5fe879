// sluice dashboard: polls /_node/stats once a second and draws the last two minutes on
// <canvas> charts. Rates come from the difference between two polls, so they are exact per
// second; nothing is loaded from anywhere but this server.
'use strict';

const HISTORY_SECONDS = 120;
const SHARE_SECONDS = 10;
const COLORS = ['#4fc3f7', '#ffb74d', '#81c784', '#ba68c8', '#f06292', '#fff176', '#4db6ac', '#9575cd'];

const state = {
  selected: null, // null = every pipeline
  pipelines: new Map(), // id -> series
  colorOf: new Map(),
  stats: null,
};

function colorFor(id) {
  if (!state.colorOf.has(id)) {
    state.colorOf.set(id, COLORS[state.colorOf.size % COLORS.length]);
  }
  return state.colorOf.get(id);
}

function fmtNum(n, digits) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  const d = digits === undefined ? 1 : digits;
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(d) + 'G';
  if (a >= 1e6) return (n / 1e6).toFixed(d) + 'M';
  if (a >= 1e4) return (n / 1e3).toFixed(d) + 'k';
  if (a >= 100 || Number.isInteger(n)) return Math.round(n).toString();
  return n.toFixed(d);
}

function fmtMicros(us) {
  return us >= 100 ? fmtNum(us) : String(Number(us.toPrecision(2)));
}

function fmtBytes(n, digits) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? Math.round(v).toString() : v.toFixed(digits === undefined ? 1 : digits)) + ' ' + units[i];
}

function fmtPct(n) {
  return n === undefined || n === null || Number.isNaN(n) ? '–' : n.toFixed(1) + '%';
}

function fmtDuration(ms) {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? h + 'h ' + m + 'm' : m > 0 ? m + 'm ' + (s % 60) + 's' : s + 's';
}

// Everything the charts need from one pipeline's stats document.
function extract(p) {
  const plugins = [];
  for (const kind of ['filters', 'outputs']) {
    for (const pl of (p.plugins && p.plugins[kind]) || []) {
      plugins.push({ key: kind + '/' + pl.id, name: pl.name, id: pl.id, kind: kind.slice(0, -1), ms: pl.events.duration_in_millis || 0 });
    }
  }
  return {
    eph: p.ephemeral_id,
    in: p.events.in, out: p.events.out, filtered: p.events.filtered,
    push: p.events.queue_push_duration_in_millis, worker: p.events.duration_in_millis,
    queue: p.queue.events_count || 0, bytes: p.queue.queue_size_in_bytes || 0,
    workers: (p.pipeline && p.pipeline.workers) || 1,
    plugins,
  };
}

function update(stats, now) {
  state.stats = stats;
  const seen = new Set();
  for (const [id, doc] of Object.entries(stats.pipelines || {})) {
    seen.add(id);
    const cur = extract(doc);
    let s = state.pipelines.get(id);
    if (!s || s.prev.eph !== cur.eph) {
      // New pipeline, or restarted by a reload: its counters started again.
      s = { points: [], shares: [], prev: cur, prevAt: now };
      state.pipelines.set(id, s);
      colorFor(id);
    } else {
      const dt = (now - s.prevAt) / 1000;
      if (dt > 0.2) {
        const d = (k) => Math.max(0, cur[k] - s.prev[k]);
        s.points.push({
          t: now,
          inRate: d('in') / dt,
          outRate: d('out') / dt,
          queue: cur.queue,
          bytes: cur.bytes,
          bp: (d('push') / (dt * 1000)) * 100,
          util: (d('worker') / (dt * 1000 * cur.workers)) * 100,
        });
        s.prev = cur;
        s.prevAt = now;
      }
    }
    s.doc = doc;
    s.shares.push({ t: now, plugins: cur.plugins });
    while (s.shares.length > SHARE_SECONDS + 1) s.shares.shift();
    while (s.points.length && now - s.points[0].t > HISTORY_SECONDS * 1000) s.points.shift();
  }
  for (const id of [...state.pipelines.keys()]) {
    if (!seen.has(id)) state.pipelines.delete(id);
  }
  if (state.selected !== null && !state.pipelines.has(state.selected)) state.selected = null;
}

function selectedIds() {
  return state.selected === null ? [...state.pipelines.keys()] : [state.selected];
}

function renderTabs() {
  const nav = document.getElementById('pipelines');
  const ids = [null, ...state.pipelines.keys()];
  const key = ids.map(String).join('|') + '#' + String(state.selected);
  if (nav.dataset.key === key) return;
  nav.dataset.key = key;
  nav.textContent = '';
  for (const id of ids) {
    const b = document.createElement('button');
    b.type = 'button';
    if (id !== null) {
      const dot = document.createElement('span');
      dot.className = 'dot';
      dot.style.background = colorFor(id);
      b.appendChild(dot);
    }
    b.appendChild(document.createTextNode(id === null ? 'all pipelines' : id));
    if (id === state.selected) b.className = 'on';
    b.addEventListener('click', () => { state.selected = id; render(); });
    nav.appendChild(b);
  }
}

function setTile(id, text, value) {
  const el = document.getElementById(id);
  el.textContent = text;
  el.dataset.value = value === undefined ? '' : String(value);
}

function renderTiles() {
  const ids = selectedIds();
  let inRate = 0, outRate = 0, total = 0, queue = 0, bp = 0, busy = 0, workers = 0, have = false;
  for (const id of ids) {
    const s = state.pipelines.get(id);
    const last = s.points[s.points.length - 1];
    total += s.prev.out;
    queue += s.prev.queue;
    const w = s.prev.workers;
    workers += w;
    if (last) {
      have = true;
      inRate += last.inRate;
      outRate += last.outRate;
      bp += last.bp;
      busy += (last.util * w);
    }
  }
  setTile('t-in', have ? fmtNum(inRate) : '–', have ? inRate : undefined);
  setTile('t-out', have ? fmtNum(outRate) : '–', have ? outRate : undefined);
  setTile('t-total', fmtNum(total, 2), total);
  setTile('t-queue', fmtNum(queue), queue);
  // Back-pressure of several pipelines: their mean (each is a share of its inputs' time).
  if (ids.length > 0) bp /= ids.length;
  setTile('t-bp', have ? fmtPct(bp) : '–', have ? bp : undefined);
  const util = workers > 0 ? busy / workers : 0;
  setTile('t-util', have ? fmtPct(util) : '–', have ? util : undefined);
  const proc = (state.stats && state.stats.process) || {};
  setTile('t-cpu', proc.cpu ? proc.cpu.percent + '%' : '–', proc.cpu ? proc.cpu.percent : undefined);
  setTile('t-mem', proc.mem ? fmtBytes(proc.mem.resident_in_bytes) : '–', proc.mem ? proc.mem.resident_in_bytes : undefined);
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (v <= m * p) return m * p;
  }
  return 10 * p;
}

// series: [{color, dashed, values: [{t, v}]}]
// floor: the least top of the y axis (byte charts).
function drawChart(canvas, series, fmt, now, floor) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(10, canvas.clientWidth);
  const h = Math.max(10, canvas.clientHeight);
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  let max = 0;
  for (const s of series) for (const p of s.values) max = Math.max(max, p.v);
  // Byte charts (with a floor) get power-of-two scales, so their labels are round.
  const ymax = floor ? Math.pow(2, Math.ceil(Math.log2(Math.max(max, floor)))) : niceMax(max);
  let labelWidth = 0;
  for (let i = 0; i <= 4; i++) labelWidth = Math.max(labelWidth, ctx.measureText(fmt((ymax * i) / 4)).width);
  const left = Math.ceil(labelWidth) + 12, right = 8, top = 6, bottom = 18;
  const pw = w - left - right, ph = h - top - bottom;
  const t0 = now - HISTORY_SECONDS * 1000;
  const x = (t) => left + ((t - t0) / (HISTORY_SECONDS * 1000)) * pw;
  const y = (v) => top + ph - (v / ymax) * ph;

  ctx.lineWidth = 1;
  ctx.strokeStyle = '#263240';
  ctx.fillStyle = '#7f8fa3';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4;
    const yy = Math.round(y(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(left, yy);
    ctx.lineTo(w - right, yy);
    ctx.stroke();
    ctx.fillText(fmt(v), left - 6, yy);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  for (const [sec, label] of [[120, '-2m'], [90, '-90s'], [60, '-1m'], [30, '-30s'], [0, 'now']]) {
    ctx.fillText(label, Math.min(w - right - 12, Math.max(left + 10, x(now - sec * 1000))), h - 4);
  }
  let drawn = false;
  for (const s of series) {
    const pts = s.values.filter((p) => p.t >= t0);
    if (pts.length === 0) continue;
    drawn = true;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 1.8;
    ctx.setLineDash(s.dashed ? [5, 4] : []);
    ctx.beginPath();
    pts.forEach((p, i) => (i === 0 ? ctx.moveTo(x(p.t), y(p.v)) : ctx.lineTo(x(p.t), y(p.v))));
    if (pts.length === 1) ctx.lineTo(x(pts[0].t) + 2, y(pts[0].v));
    ctx.stroke();
  }
  ctx.setLineDash([]);
  if (!drawn) {
    ctx.fillStyle = '#7f8fa3';
    ctx.textAlign = 'center';
    ctx.fillText('waiting for data…', left + pw / 2, top + ph / 2);
  }
}

function seriesOf(field, dashed) {
  return selectedIds().map((id) => {
    const s = state.pipelines.get(id);
    return { color: colorFor(id), dashed, values: s.points.map((p) => ({ t: p.t, v: p[field] })) };
  });
}

function renderCharts(now) {
  drawChart(document.getElementById('chart-rate'), [...seriesOf('inRate', true), ...seriesOf('outRate', false)], (v) => fmtNum(v), now);
  drawChart(document.getElementById('chart-queue'), seriesOf('queue', false), (v) => fmtNum(v), now);
  drawChart(document.getElementById('chart-bp'), [...seriesOf('bp', true), ...seriesOf('util', false)], (v) => Math.round(v) + '%', now);
  drawChart(document.getElementById('chart-bytes'), seriesOf('bytes', false), fmtBytes, now, 1 << 20);
}

function renderShare() {
  const box = document.getElementById('share');
  const ids = selectedIds();
  const many = ids.length > 1;
  let rows = [];
  let windowed = true;
  for (const id of ids) {
    const s = state.pipelines.get(id);
    const first = s.shares[0];
    const last = s.shares[s.shares.length - 1];
    if (!first || !last) continue;
    for (const p of last.plugins) {
      const before = first.plugins.find((q) => q.key === p.key);
      rows.push({ id, name: p.name, pluginId: p.id, kind: p.kind, delta: p.ms - (before ? before.ms : 0), total: p.ms });
    }
  }
  let sum = rows.reduce((a, r) => a + Math.max(0, r.delta), 0);
  if (sum <= 0) {
    // Idle for the last seconds: show the shares since start instead.
    windowed = false;
    sum = rows.reduce((a, r) => a + r.total, 0);
  }
  document.getElementById('share-scope').textContent = windowed ? 'last ' + SHARE_SECONDS + ' s' : 'since start';
  rows = rows.map((r) => ({ ...r, share: sum > 0 ? (windowed ? Math.max(0, r.delta) : r.total) / sum : 0 }));
  rows.sort((a, b) => b.share - a.share);
  box.textContent = '';
  if (rows.length === 0) {
    const d = document.createElement('div');
    d.className = 'none';
    d.textContent = 'no filters or outputs';
    box.appendChild(d);
    return;
  }
  for (const r of rows.slice(0, 12)) {
    const row = document.createElement('div');
    row.className = 'row';
    const name = document.createElement('div');
    name.className = 'name';
    name.title = r.pluginId;
    name.textContent = r.name;
    const em = document.createElement('em');
    em.textContent = (many ? r.id + ' · ' : '') + r.kind;
    name.appendChild(em);
    const pct = document.createElement('div');
    pct.className = 'pct';
    pct.textContent = (r.share * 100).toFixed(1) + '%';
    const bar = document.createElement('div');
    bar.className = 'bar';
    const fill = document.createElement('div');
    fill.style.width = (r.share * 100).toFixed(1) + '%';
    fill.style.background = colorFor(r.id);
    bar.appendChild(fill);
    row.append(name, pct, bar);
    box.appendChild(row);
  }
}

function renderInfo() {
  const table = document.getElementById('info');
  const ids = selectedIds();
  const rows = [];
  if (ids.length !== 1) {
    let workers = 0, evIn = 0, evOut = 0;
    for (const id of ids) {
      const d = state.pipelines.get(id).doc;
      workers += d.pipeline.workers;
      evIn += d.events.in;
      evOut += d.events.out;
    }
    rows.push(['pipelines', ids.length], ['workers', workers], ['events in', fmtNum(evIn, 2)], ['events out', fmtNum(evOut, 2)]);
    const r = (state.stats && state.stats.reloads) || {};
    rows.push(['reloads ok / failed', (r.successes || 0) + ' / ' + (r.failures || 0)]);
  } else {
    const d = state.pipelines.get(ids[0]).doc;
    const q = d.queue;
    rows.push(['workers · batch', d.pipeline.workers + ' · ' + d.pipeline.batch_size + ' / ' + d.pipeline.batch_delay + ' ms']);
    rows.push(['queue', q.type + (q.type === 'persisted' ? ' · ' + fmtBytes(q.queue_size_in_bytes) + ' of ' + fmtBytes(q.max_queue_size_in_bytes) : '')]);
    if (q.type === 'persisted') rows.push(['unacked events', fmtNum(q.unacked_events)]);
    rows.push(['events in · filtered · out', fmtNum(d.events.in, 2) + ' · ' + fmtNum(d.events.filtered, 2) + ' · ' + fmtNum(d.events.out, 2)]);
    // Output lanes (sluice's own): what each holds for its output.
    for (const o of (d.plugins && d.plugins.outputs) || []) {
      const l = o.lane;
      if (!l) continue;
      let v = l.type + ' · ' + fmtNum(l.events) + ' held';
      if (l.type === 'persisted') v += ' · ' + fmtBytes(l.queue_size_in_bytes) + ' of ' + fmtBytes(l.max_queue_size_in_bytes);
      if (l.events > 0 && l.oldest_event_age_in_seconds > 0) v += ' · for ' + l.oldest_event_age_in_seconds + ' s';
      if (l.dropped > 0) v += ' · ' + fmtNum(l.dropped) + ' dropped';
      rows.push(['lane ' + o.id, v]);
    }
    rows.push(['reloads ok / failed', d.reloads.successes + ' / ' + d.reloads.failures]);
    if (d.reloads.last_error) rows.push(['last reload error', d.reloads.last_error.message]);
  }
  table.textContent = '';
  for (const [k, v] of rows) {
    const tr = document.createElement('tr');
    const a = document.createElement('td');
    const b = document.createElement('td');
    a.textContent = k;
    b.textContent = String(v);
    tr.append(a, b);
    table.appendChild(tr);
  }
}

function renderPlugins() {
  const table = document.getElementById('plugins');
  const ids = selectedIds();
  table.textContent = '';
  const head = document.createElement('tr');
  for (const h of ['plugin', 'in', 'out', 'µs/event']) {
    const th = document.createElement('th');
    th.textContent = h;
    head.appendChild(th);
  }
  table.appendChild(head);
  let n = 0;
  for (const id of ids) {
    const d = state.pipelines.get(id).doc;
    const p = d.plugins || {};
    const rows = [
      ...(p.inputs || []).map((x) => [x.name, '', x.events.out, '', x.id]),
      ...[...(p.filters || []), ...(p.outputs || [])].map((x) => [
        x.name,
        x.events.in,
        x.events.out,
        x.events.in > 0 ? fmtMicros((x.events.duration_in_millis * 1000) / x.events.in) : '–',
        x.id,
      ]),
    ];
    for (const [name, ein, eout, ms, pid] of rows) {
      if (n++ >= 12) return;
      const tr = document.createElement('tr');
      // A click opens the tap pane on this plugin.
      tr.dataset.tap = id + '/' + pid;
      tr.className = 'tappable';
      tr.title = 'watch ' + id + '/' + pid + ' (tap)';
      tr.addEventListener('click', () => openTap(tr.dataset.tap));
      for (const v of [ids.length > 1 ? id + ' · ' + name : name, ein === '' ? '' : fmtNum(ein, 2), fmtNum(eout, 2), ms]) {
        const td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
  }
}

function renderNode() {
  const s = state.stats;
  if (!s) return;
  document.getElementById('node').textContent = s.name + ' · sluice ' + s.version + ' · ' + s.http_address;
}

function render() {
  const now = performance.now();
  renderNode();
  renderTabs();
  renderTiles();
  renderCharts(now);
  renderShare();
  renderInfo();
  renderPlugins();
}

function setStatus(ok, text) {
  const el = document.getElementById('status');
  el.textContent = text;
  el.className = 'status ' + (ok ? 'ok' : 'err');
}

// The charts start with the server's once-a-second samples of the last two minutes.
async function loadHistory() {
  try {
    const r = await fetch('/dashboard/history', { cache: 'no-store' });
    if (!r.ok) return;
    const h = await r.json();
    const now = performance.now();
    for (const [id, p] of Object.entries(h.pipelines || {})) {
      const samples = (p.samples || []).map((x) => ({ ...x, t: now - x.ago_ms }));
      if (samples.length === 0) continue;
      const points = [];
      for (let i = 1; i < samples.length; i++) {
        const [a, b] = [samples[i - 1], samples[i]];
        const dt = (b.t - a.t) / 1000;
        if (dt <= 0.2) continue;
        const d = (k) => Math.max(0, b[k] - a[k]);
        points.push({
          t: b.t,
          inRate: d('in') / dt,
          outRate: d('out') / dt,
          queue: b.events_count,
          bytes: b.queue_size_in_bytes,
          bp: (d('queue_push_duration_in_millis') / (dt * 1000)) * 100,
          util: (d('duration_in_millis') / (dt * 1000 * (p.workers || 1))) * 100,
        });
      }
      const last = samples[samples.length - 1];
      colorFor(id);
      state.pipelines.set(id, {
        points,
        shares: [],
        prev: {
          eph: p.ephemeral_id, in: last.in, out: last.out, filtered: 0,
          push: last.queue_push_duration_in_millis, worker: last.duration_in_millis,
          queue: last.events_count, bytes: last.queue_size_in_bytes, workers: p.workers || 1, plugins: [],
        },
        prevAt: last.t,
      });
    }
  } catch (e) {
    // No history: the charts fill as the page polls.
  }
}

const started = performance.now();

async function poll() {
  try {
    const r = await fetch('/_node/stats', { cache: 'no-store' });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const stats = await r.json();
    update(stats, performance.now());
    render();
    setStatus(true, 'live · ' + fmtDuration(performance.now() - started));
  } catch (e) {
    setStatus(false, 'disconnected: ' + e.message);
  } finally {
    setTimeout(poll, 1000);
  }
}

// The tap pane: a plugin's live events (GET /_node/tap, NDJSON), at most 20 a second, the
// newest first. Opened from the plugins table; closing it ends the stream (the server detaches).
const TAP_KEEP = 50;
const tap = { ctrl: null, seen: 0, dropped: 0 };

function closeTap() {
  if (tap.ctrl) tap.ctrl.abort();
  tap.ctrl = null;
  document.getElementById('tap').hidden = true;
}

function tapStatus(text) {
  document.getElementById('tap-status').textContent = text;
}

async function openTap(target) {
  closeTap();
  tap.seen = 0;
  tap.dropped = 0;
  const pane = document.getElementById('tap');
  pane.hidden = false;
  document.getElementById('tap-title').textContent = target;
  const list = document.getElementById('tap-events');
  list.textContent = '';
  const when = document.getElementById('tap-when').value.trim();
  const ctrl = new AbortController();
  tap.ctrl = ctrl;
  let url = '/_node/tap?rate=20&plugin=' + encodeURIComponent(target);
  if (when) url += '&when=' + encodeURIComponent(when);
  tapStatus('connecting…');
  try {
    const r = await fetch(url, { signal: ctrl.signal, cache: 'no-store' });
    if (!r.ok) {
      const body = await r.json().catch(() => ({}));
      tapStatus('error: ' + ((body.error && body.error.message) || 'HTTP ' + r.status));
      return;
    }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = rest.indexOf('\n')) >= 0) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        if (line) tapLine(JSON.parse(line), list);
      }
    }
    if (!document.getElementById('tap-status').textContent.startsWith('ended:')) {
      tapStatus('ended · ' + tap.seen + ' events');
    }
  } catch (e) {
    if (ctrl.signal.aborted) return;
    tapStatus('disconnected: ' + e.message);
  }
}

function tapLine(l, list) {
  if (l.tap) {
    tapStatus('watching · 0 events');
    return;
  }
  if (l.heartbeat) return;
  if (l.ended) {
    tapStatus('ended: ' + l.ended);
    return;
  }
  if (l.dropped !== undefined) {
    tap.dropped = l.dropped_total;
  } else {
    tap.seen++;
    const item = document.createElement('pre');
    item.className = 'ev';
    const shown = l.metadata ? { ...l.event, '@metadata': l.metadata } : l.event;
    item.textContent = l.time + '  ' + l.kind + ' ' + l.plugin + '\n' + JSON.stringify(shown, null, 2);
    list.prepend(item);
    while (list.childElementCount > TAP_KEEP) list.lastElementChild.remove();
  }
  tapStatus('watching · ' + tap.seen + ' events' + (tap.dropped ? ' · ' + tap.dropped + ' dropped' : ''));
}

document.getElementById('tap-close').addEventListener('click', closeTap);
document.getElementById('tap-when').addEventListener('keydown', (e) => {
  const target = document.getElementById('tap-title').textContent;
  if (e.key === 'Enter' && target) openTap(target);
});
window.addEventListener('resize', () => { if (state.stats) render(); });
loadHistory().then(poll);
