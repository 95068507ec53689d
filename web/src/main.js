// The page: reads the embedded data, draws the single-file report or the diff page, and exports
// what it drew as window.__memsnap for the browser test (tests/browser).
const D = JSON.parse(document.getElementById("memsnap-data").textContent);
const M = (window.__memsnap = { timelines: [], states: [], errors: [], mode: D.mode });
window.addEventListener("error", (e) => {
  M.errors.push(String(e.message || e));
  document.body.dataset.jsError = String(e.message || e);
});

// Words for what the trace cannot explain, and for the lifetimes counted from the start.
function traceNotes(dev) {
  const c = dev.counted, out = [];
  // The one model every command reads (docs/figures.md, "When the trace does not explain the state").
  const items = [];
  if (c.unplaced_frees > 0) {
    items.push(fmtCountOf(c.unplaced_frees, "free") + " (" + fmtBytes(c.unplaced_free_bytes) +
      ") of blocks the trace never allocates, at addresses in no segment the file records: they cannot have been live from the start, and nothing says when they were, so every figure leaves them out;");
  }
  if (c.beyond_end_bytes > 0) {
    items.push(fmtBytes(c.beyond_end_bytes) + " the trace leaves live at its end" + (c.beyond_end > 0 ? " (" + fmtCountOf(c.beyond_end, "allocation") + " never freed)" : "") +
      " that the snapshot's final state does not hold: their frees were not recorded, so they count as live to the end;");
  }
  if (c.unreconciled_bytes > 0) {
    items.push(fmtBytes(c.unreconciled_bytes) + " of the final state that the trace does not explain: counted as live from the start, of unknown kind;");
  }
  if (c.segments_left_out > 0) {
    items.push(fmtCountOf(c.segments_left_out, "segment") + " (" + fmtBytes(c.segments_left_out_bytes) +
      ") that the trace creates and never releases although the final state does not hold them: left out of reserved memory.");
  }
  if (items.length) {
    items[items.length - 1] = items[items.length - 1].replace(/;$/, ".");
    out.push(h("div", { class: "note warn" },
      h("p", { text: "The trace does not explain the snapshot's final state. Every figure here, and every memsnap command, reads it one way:" }),
      h("ul", {}, ...items.map((t) => h("li", { text: t }))),
      c.timeline_max_over_reserved > 0
        ? h("p", { text: "Even so, live memory exceeds reserved memory by up to " + fmtBytes(c.timeline_max_over_reserved) +
          ", which a real allocator cannot do: the trace contradicts itself (it may have been edited or pieced together), so read the chart's shape rather than its values." })
        : ""));
  }
  if (c.pre_window > 0) {
    out.push(note(fmtCountOf(c.pre_window, "block") + " (" + fmtBytes(c.pre_window_bytes) + ") are freed in the trace but were allocated before it began " +
      "(only their free is recorded): they count as live from the start, labelled \u201callocated before the trace\u201d."));
  }
  if (c.ghosts > 0) {
    out.push(note(fmtCountOf(c.ghosts, "block") + " (" + fmtBytes(c.ghost_bytes) + ") are live at the end but never appear in the trace " +
      "(\u201cghosts\u201d: allocated before the recording began and never freed): they count as live from the start."));
  }
  return out;
}

function timelineLegend(dev) {
  return h("div", { class: "legend" },
    swatch(COLORS.live, "live (highest per column)", "requested bytes of allocated and pending-free blocks, as PyTorch's Active Memory Timeline plots it"),
    swatch("rgba(31,95,191,0.35)", "live (lowest per column)"),
    swatch(COLORS.reserved, "reserved (dashed)", "bytes the caching allocator holds from CUDA (its segments)"),
    swatch(COLORS.peak, "peak"),
    swatch("linear-gradient(90deg,hsl(10,55%,64%),hsl(150,55%,64%),hsl(290,55%,64%))", "largest allocations, one band each",
      "each band is one allocation, from its malloc to its free; colour by allocation stack"),
    swatch(COLORS.rest, "all smaller allocations (grey)", "every allocation not drawn as its own band, summed"));
}

// A device that ran out of memory: the answer `memsnap oom` opens with (why it failed, the
// setting that fits or the memory the run needs, what to cut), computed by the analysis.
function oomAnswer(dev) {
  if (!dev.oom_answer || !dev.oom_answer.length) return [];
  const dl = h("dl", { class: "terms" });
  for (const l of dev.oom_answer) dl.append(h("dt", { text: l.label }), h("dd", { text: l.text }));
  return [h("div", { class: "oom-answer" }, h("h3", { text: "Out of memory: the answer" }), dl,
    note("memsnap oom FILE prints the evidence: the allocator's state at the failure, who held the memory, and every setting replayed."))];
}

// Devices share one time axis: microseconds since the first event of any device (each device's
// own x counts from its first event, as the CLI's times do), and one zoom. Null unless two or
// more devices have timed traces.
function sharedTimeAxis(devices) {
  const timed = devices.filter((d) => d.tiles && d.has_time && d.t0_us != null);
  if (timed.length < 2) return null;
  const t0 = Math.min(...timed.map((d) => d.t0_us)), t1 = Math.max(...timed.map((d) => d.t0_us + d.x_span));
  const maps = new Map();
  for (const d of timed) {
    const off = d.t0_us - t0;
    maps.set(d.device, { fwd: (x) => x + off, inv: (v) => v - off, kind: "time", lo: 0, limit: t1 - t0, offset: off });
  }
  return { maps, charts: [], span: t1 - t0 };
}

function renderDevice(dev, tables) {
  const sec = section("Device " + dev.device + ": memory timeline", "timeline-" + dev.device, null, "timeline");
  const cards = h("div", { class: "cards" });
  if (dev.peak) {
    // Each peak's moment as summary writes it: "at +1.329 s", or "after event 5" without times.
    const at = (x, e) => fmtMoment(x, e, dev.has_time);
    cards.append(card("peak live", fmtBytes(dev.peak.bytes), "highest live (requested) bytes", at(dev.peak.x, dev.peak.event)),
      card("peak reserved", fmtBytes(dev.peak.reserved_bytes), "highest reserved bytes (segments held from CUDA)",
        at(dev.peak.reserved_x, dev.peak.reserved_event)));
  }
  cards.append(card("live at end", fmtBytes(dev.end_live)), card("reserved at end", fmtBytes(dev.end_reserved)),
    card("trace events", fmtCount(dev.num_events)), card("allocations", fmtCount(dev.mallocs), "allocations the trace records (its alloc events, as memsnap summary counts them)"));
  // What kind of run this is, with the evidence from the stacks (as summary, top and oom say it).
  if (dev.workload) cards.append(card("workload", dev.workload.title, "decided from the device's stacks (docs/attribution.md, \"Workload\")", dev.workload.evidence));
  sec.append(cards, ...oomAnswer(dev), ...traceNotes(dev));
  let chart = null;
  if (dev.tiles) {
    const tools = h("div", { class: "controls" });
    const host = h("div", { class: "chart" });
    const details = h("div", { class: "details" }, h("span", { class: "note", text: "Click a band to keep its allocation stack here." }));
    sec.append(tools, host, timelineLegend(dev), details);
    const shared = M.shared && M.shared.maps.get(dev.device);
    if (shared) sec.append(note("The devices share one time axis, from the first event of any of them, and one zoom; the times in the figures " +
      "count from this device's own first event" + (shared.offset ? " (" + fmtSpan(shared.offset, true) + " after the first)" : "") + ", as the CLI's do."));
    chart = new TimelineChart(host, dev, {
      tables, details, mapping: shared || undefined,
      onView: (c, a, b) => {
        setHashPart("t" + dev.device, a <= 0 && b >= c.span ? null : +a.toFixed(1) + "," + +b.toFixed(1));
        if (shared) {
          const lo = c.map.fwd(a), hi = c.map.fwd(b);
          for (const o of M.shared.charts) if (o !== c) o.setView(o.map.inv(lo), o.map.inv(hi), true);
        }
      },
    });
    if (shared) M.shared.charts.push(chart);
    M.timelines.push(chart);
    const button = (text, fn, title) => { const b = h("button", { type: "button", text, title }); b.addEventListener("click", fn); tools.append(b); return b; };
    button("whole trace", () => chart.reset(), "or double-click the chart, or press 0");
    if (dev.peak) button("zoom to the peak", () => { chart.zoomTo(dev.peak.x); if (chart.state) chart.state.showLabel("peak live"); }, "or press p");
    for (const o of dev.ooms || []) button("zoom to the OOM", () => { chart.zoomTo(o.x); if (chart.state) chart.state.showLabel("OOM"); });
    tools.append(h("span", { class: "note", text: "Wheel or drag to zoom, shift-drag or arrow keys to pan, double-click to reset. " +
      "Click the chart to see the allocator's segments at that moment below." }));
    if (dev.reduced) sec.append(note(dev.reduced));
    if (dev.categories) renderCategories(sec, dev, chart);
    if (dev.segment_lifetimes && dev.segment_lifetimes.n) {
      const st = section("Device " + dev.device + ": cached segments over time", "segtl-" + dev.device, null, "segment-timeline");
      M.segmentTimelines = M.segmentTimelines || [];
      M.segmentTimelines.push(new SegmentTimeline(st, dev, chart));
    }
    const v = getHashPart("t" + dev.device);
    if (v) { const [a, b] = v.split(",").map(Number); if (isFinite(a) && isFinite(b) && b > a) chart.setView(a, b, true); }
  } else {
    sec.append(note("This device has no trace events: only its final state is known " +
      "(record with torch.cuda.memory._record_memory_history() to get a timeline)."));
  }
  if (dev.states) {
    const ss = section("Device " + dev.device + ": the allocator's segments at a moment", "state-" + dev.device, null, "state");
    const view = new StateView(ss, dev, tables);
    M.states.push(view);
    if (chart) {
      view.timeline = chart;
      chart.state = view;
      chart.opts.onPick = (x, e) => view.pick(x, e);
      chart.setCursor(view.x);
    }
    const s = getHashPart("s" + dev.device);
    if (s != null && isFinite(Number(s))) view.showEvent(Number(s), false);
  }
}

// Memory by category (parameters, gradients, optimizer state, activations...) at the peak and over
// time: a stacked chart that follows the timeline's zoom (docs/attribution.md names the rules).
const CATEGORIES = [
  ["parameter", "parameters", "#1f5fbf", "allocated before the first forward (module init, .to(), load_state_dict) and kept"],
  ["gradient", "gradients", "#7a5af8", "allocated by AccumulateGrad or .grad creation in backward and kept for the optimizer"],
  ["optimizer_state", "optimizer state", "#0e9384", "allocated under an optimizer's step or its state init and alive across steps"],
  ["activation", "activations", "#f79009", "allocated in forward and still alive when backward starts (saved for backward)"],
  ["temporary", "temporaries", "#98a2b3", "allocated and freed inside one phase (forward, backward or the optimizer step)"],
  ["input", "inputs", "#039855", "allocated by the data loading (batches moved to the GPU)"],
  ["kv_cache", "KV cache", "#c11574", "made by KV cache code (transformers' cache_utils, vLLM's cache engine): keys and values kept across forward calls"],
  ["autocast_cache", "autocast cache", "#dc6803", "autocast's low-precision copies of the weights, kept until autocast exits"],
  ["state", "state", "#475467", "kept by an object of the program's own (its __init__ made it with *_like or a comprehension): neither parameters nor optimizer state"],
  ["unknown", "unknown", "#d0d5dd", "no stack or no rule applies"],
];
const BUILT_IN_CATEGORIES = CATEGORIES.length;
// The user's own categories (--category NAME=REGEX) come after the built-in ones, coloured from a
// fixed palette in the order given (docs/attribution.md, "User categories").
const USER_CATEGORY_COLORS = ["#e31a1c", "#ff7f00", "#6a3d9a", "#b15928", "#1f78b4", "#33a02c", "#f768a1", "#8c6d31"];
for (const name of D.category_names || []) {
  if (CATEGORIES.some(([k]) => k === name)) continue;
  const color = USER_CATEGORY_COLORS[(CATEGORIES.length - BUILT_IN_CATEGORIES) % USER_CATEGORY_COLORS.length];
  CATEGORIES.push([name, name, color, "your category: a frame of the stack matches --category " + name]);
}
function renderCategories(sec, dev, timeline) {
  const c = dev.categories;
  const cats = CATEGORIES.filter(([k]) => c.series[k]);
  // The table at the peak lists the kinds that hold memory there, not "temporaries 0 B 0.0%".
  const atPeak = cats.filter(([k]) => c.series[k].peak > 0);
  if (!cats.length || !c.n) return;
  const width = c.column_width;
  const xs0 = [];
  let col = 0;
  for (const d of unpackVarints(c.columns)) { col += d; xs0.push(col * width); }
  const values0 = cats.map(([k]) => unpackVarints(c.series[k].bytes));
  let xs = xs0, values = values0;
  const peakTotal = cats.reduce((s, [k]) => s + c.series[k].peak, 0);
  const box = h("div", { class: "categories", "data-section": "categories" });
  sec.append(box);
  box.append(h("h3", { text: "Memory by kind" }), note("Live memory split by what it is, as " +
    "memsnap top --by category names it (inferred from each allocation's stack and lifetime); " +
    "each column at its highest point, so the top edge is the live curve above." +
    (dev.counted.unreconciled_bytes > 0 ? " What the trace does not explain of the final state is of unknown kind (see the note above)." : "")));
  // At the peak: one row per category, largest first.
  const t = h("table", { class: "cats" }, h("thead", {}, h("tr", {}, h("th", { text: "at the peak" }),
    h("th", { class: "n", text: "bytes" }), h("th", { class: "n", text: "share" }))));
  const body = h("tbody");
  for (const [k, label, color, title] of atPeak.slice().sort((p, q) => c.series[q[0]].peak - c.series[p[0]].peak)) {
    const v = c.series[k].peak;
    const bar = h("span", { class: "bar" });
    bar.style.width = Math.max(1, (80 * v) / Math.max(1, peakTotal)) + "px";
    bar.style.background = color;
    body.append(h("tr", { title }, h("td", {}, swatch(color, label)),
      h("td", { class: "n" }, bar, " " + fmtBytes(v)),
      // A kind that holds something never reads "0.0%" next to its bytes.
      h("td", { class: "n", text: peakTotal > 0 ? (v > 0 && v / peakTotal < 0.0005 ? "<0.1%" : fmtPct(v / peakTotal)) : "" })));
  }
  t.append(body);
  box.append(h("div", { class: "table-wrap" }, t));
  // Over time: cumulative sums, drawn from the top series down so each fills over the next.
  const span = dev.x_span;
  let n = 0, cum = [], acc = [];
  const stackUp = () => {
    n = xs.length;
    cum = [];
    acc = new Array(n).fill(0);
    for (const v of values) { acc = acc.map((a, i) => a + v[i]); cum.push(acc); }
    const out = [xs.concat([span])];
    for (let s = cum.length - 1; s >= 0; s--) out.push(cum[s].concat([cum[s][n - 1]]));
    return out;
  };
  const data = stackUp();
  // Zoomed in, the samples of the timeline's finer tiles (kinds per group of a few of its
  // columns), decoded on first use; the whole-trace samples elsewhere.
  const names = Object.keys(c.series);
  const slot = cats.map(([k]) => names.indexOf(k));
  const tiles = new Map((c.tiles || []).map((t) => [t[0] + ":" + t[1], { level: t[0], tile: t[1], n: t[2], packed: t[3], d: null }]));
  const tileSamples = (e, lod) => {
    if (!e.d) {
      const v = unpackVarints(e.packed), m = names.length, w = lod.width(e.level);
      const d = { x: [], v: names.map(() => []) };
      let colIdx = e.tile * lod.C;
      const prev = new Array(m).fill(0);
      for (let i = 0; i + m < v.length && d.x.length < e.n; i += m + 1) {
        colIdx += v[i];
        d.x.push(colIdx * w);
        for (let q = 0; q < m; q++) { prev[q] += v[i + 1 + q]; d.v[q].push(prev[q]); }
      }
      e.d = d;
    }
    return e.d;
  };
  const finer = (a, b) => {
    const lod = timeline && timeline.lod;
    if (!lod || !tiles.size) return null;
    for (let level = timeline.cols.level; level > 0; level--) {
      const t0 = lod.tileOf(a, level), t1 = lod.tileOf(b, level);
      let all = true;
      for (let t = t0; t <= t1 && all; t++) all = tiles.has(level + ":" + t);
      if (!all) continue;
      const key = level + ":" + t0 + ":" + t1;
      if (lastFiner && lastFiner.key === key) return lastFiner;
      const lo = t0 * lod.C * lod.width(level), hi = Math.min((t1 + 1) * lod.C * lod.width(level), span);
      const fx = [], fv = cats.map(() => []);
      const take = (x, i, src) => { fx.push(x); cats.forEach((_, s) => fv[s].push(src(s, i))); };
      for (let i = 0; i < xs0.length && xs0[i] < lo; i++) take(xs0[i], i, (s, j) => values0[s][j]);
      for (let t = t0; t <= t1; t++) {
        const d = tileSamples(tiles.get(level + ":" + t), lod);
        for (let i = 0; i < d.x.length; i++) take(d.x[i], i, (s, j) => d.v[slot[s]][j]);
      }
      // The whole-trace samples again from the first column at or past the tiles' end.
      let i0 = 0;
      while (i0 < xs0.length && xs0[i0] < hi) i0++;
      for (let i = i0; i < xs0.length; i++) take(xs0[i], i, (s, j) => values0[s][j]);
      lastFiner = { key, level, xs: fx, values: fv };
      return lastFiner;
    }
    return null;
  };
  let shownLevel = 0, lastFiner = null, shown = null;
  const host = h("div", { class: "chart" });
  box.append(host, h("div", { class: "legend" }, ...cats.map(([k, label, color, title]) => swatch(color, label, title))));
  const stepped = uPlot.paths.stepped({ align: 1 });
  let axis = byteAxis(Math.max(1, ...acc)), ticks = null;
  const series = [{}];
  for (let s = cats.length - 1; s >= 0; s--) {
    series.push({ stroke: cats[s][2], fill: cats[s][2], width: 0, paths: stepped, points: { show: false } });
  }
  const u = new uPlot({
    width: Math.max(320, host.clientWidth || 900), height: 200, legend: { show: false },
    scales: { x: { time: false, auto: false, min: 0, max: span }, y: { auto: false, min: 0, max: axis.top } },
    axes: [
      { stroke: "#667085", grid: { show: false }, size: 36,
        // On the devices' shared time axis (sharedTimeAxis) when the timeline is on it.
        splits: (u, i, lo, hi) => {
          const off = (timeline && timeline.map.offset) || 0;
          ticks = xAxis(lo + off, hi + off, dev.has_time ? "time" : "events", Math.max(3, u.bbox.width / devicePixelRatio / 120));
          return ticks.ticks.map((t) => t - off);
        },
        values: (u, s) => s.map((v) => ticks.label(v + ((timeline && timeline.map.offset) || 0))) },
      { stroke: "#667085", grid: { stroke: "#eef0f3" }, ticks: { show: false }, size: 78,
        splits: () => axis.ticks, values: (u, s) => s.map((v) => axis.label(v)) },
    ],
    series,
    cursor: { drag: { x: false, y: false }, points: { show: false }, y: false },
  }, data, host);
  // Hover: the categories of the column under the pointer.
  u.over.addEventListener("mousemove", (e) => {
    const i = u.cursor.idx;
    if (i == null || i >= n) { hideTip(); return; }
    const lines = [fmtX(xs[i], dev.has_time)];
    for (let s = cats.length - 1; s >= 0; s--) lines.push(cats[s][1] + ": " + fmtBytes(values[s][i]));
    lines.push("total: " + fmtBytes(cum[cum.length - 1][i]));
    showTip(e, lines.join("\n"));
  });
  u.over.addEventListener("mouseleave", hideTip);
  const follow = (a, b) => {
    const f = finer(a, b);
    if (f !== shown) {  // other samples than those drawn (the same tiles keep theirs)
      xs = f ? f.xs : xs0;
      values = f ? f.values : values0;
      shownLevel = f ? f.level : 0;
      shown = f;
      u.setData(stackUp(), false);
    }
    let top = 1;
    for (let i = 0; i < n; i++) {
      const right = i + 1 < n ? xs[i + 1] : span;
      if (right >= a && xs[i] <= b) top = Math.max(top, cum[cum.length - 1][i]);
    }
    axis = byteAxis(top);
    u.batch(() => { u.setScale("x", { min: a, max: b }); u.setScale("y", { min: 0, max: axis.top }); });
  };
  if (timeline) timeline.followers.push(follow);
  new ResizeObserver(() => { if (Math.abs(host.clientWidth - u.width) >= 1) u.setSize({ width: Math.max(320, host.clientWidth), height: u.height }); }).observe(host);
  // For the browser test: the peak's categories, and each column's total against the live curve.
  M.categories = M.categories || [];
  M.categories.push({ device: dev.device, peak: Object.fromEntries(cats.map(([k]) => [k, c.series[k].peak])),
    peak_total: peakTotal, columns: n, max_total: Math.max(...cum[cum.length - 1]), xs, totals: cum[cum.length - 1],
    negative: values.reduce((m, v) => m + v.filter((x) => x < 0).length, 0),
    // What the chart draws now (it follows the timeline's zoom).
    now: () => ({ level: shownLevel, xs, totals: cum[cum.length - 1],
      negative: values.reduce((m, v) => m + v.filter((x) => x < 0).length, 0) }) });
}

function glossary() {
  const sec = section("Terms used on this page", "terms", null, "terms");
  const terms = [
    ["live", "requested bytes of blocks that are allocated or pending free: what the program holds, as PyTorch's Active Memory Timeline plots it"],
    ["reserved", "bytes the caching allocator obtained from CUDA (cudaMalloc'd segments); it includes free cached blocks"],
    ["segment", "one cudaMalloc (or one mapped run of an expandable segment); the allocator splits it into blocks"],
    ["pending free", "freed by the program but waiting for work queued on other streams (record_stream) before it can be reused"],
    ["releasable", "free memory in whole free segments (whole free pages of expandable ones): torch.cuda.empty_cache() returns it to CUDA"],
    ["stranded", "free blocks inside segments that still hold allocations: empty_cache() cannot release them, and only requests that fit them can use them"],
    ["fragmentation", "the share of reserved memory stranded: free but inside segments that still hold allocations, so neither empty_cache() nor a request that does not fit can use it (as memsnap frag measures it)"],
    ["band", "one allocation drawn from its malloc to its free, stacked in allocation order; the grey band sums all smaller ones"],
    ["allocated before the trace", "a block the trace frees but never allocates: the recording began after it (or the ring buffer dropped its malloc)"],
    ["ghost", "a block live at the end that never appears in the trace: allocated before the recording began and never freed"],
    ["peak live / peak reserved", "the highest live bytes, and the highest reserved bytes; the allocator state view has both"],
    ["OOM", "an allocation that failed with CUDA out of memory, recorded in the trace"],
  ];
  const dl = h("dl", { class: "terms" });
  for (const [k, v] of terms) dl.append(h("dt", { text: k }), h("dd", { text: v }));
  sec.append(dl);
}

function renderReplay(sec, rp, dev) {
  const colors = ["#1f5fbf", "#d92d20", "#039855", "#7a5af8", "#f79009", "#0e9384"];
  const t = h("table", {}, h("tr", {}, h("th", { text: "configuration" }), h("th", { class: "n", text: "peak reserved" }),
    h("th", { class: "n", text: "vs recorded settings" }), h("th", { text: "" })));
  rp.runs.forEach((r, i) => {
    const d = r.peak_reserved - rp.runs[0].peak_reserved;
    t.append(h("tr", {}, h("td", { class: "site" }, breakable(r.conf)), h("td", { class: "n", text: fmtBytes(r.peak_reserved) }),
      h("td", { class: "n " + (d > 0 ? "grow" : d < 0 ? "shrink" : ""), text: i === 0 ? "" : fmtDelta(d) }),
      h("td", { class: "note", text: r.note || "" })));
  });
  sec.append(h("div", { class: "table-wrap" }, t));
  for (const n of rp.notes || []) sec.append(note(n));
  const runs = rp.runs.filter((r) => r.curve);
  if (!runs.length || !dev) return;
  // Curves that coincide point for point are said to (and drawn dashed over the first): one line
  // that hides another would read as a configuration missing.
  const sameCurve = (p, q) => p.x.length === q.x.length && p.x.every((v, k) => v === q.x[k] && p.reserved[k] === q.reserved[k]);
  const same = runs.map((r, i) => runs.findIndex((o, j) => j < i && sameCurve(o.curve, r.curve)));
  const host = h("div", { class: "chart" });
  const readout = h("div", { class: "readout note", "data-readout": "replay" });
  sec.append(host, readout);
  sec.append(h("div", { class: "legend" }, ...runs.map((r, i) => swatch(colors[i % colors.length],
    "reserved: " + r.conf + (same[i] >= 0 ? " \u2014 same as " + runs[same[i]].conf + " (drawn dashed over it)" : ""),
    same[i] >= 0 ? "this configuration's reserved curve is the same as " + runs[same[i]].conf + "'s at every point" : null))));
  const timeline = M.timelines.find((c) => c.dev.device === dev.device);
  M.replay = lineChart(host, runs.map((r, i) => ({ x: r.curve.x, y: r.curve.reserved, color: colors[i % colors.length],
    name: r.conf, dash: same[i] >= 0 ? [7, 5] : null })), dev.x_span, dev.has_time ? "time" : "events", {
    readout: (x, values) => {
      readout.textContent = x == null ? "Hover the chart for each configuration's reserved bytes at that moment." :
        (dev.has_time ? "at " + fmtX(x, true) : "after event " + fmtCount(Math.floor(x))) + ": " +
        values.map((v, i) => runs[i].conf + " " + fmtBytes(v)).join(" \u00b7 ");
    },
    // The zoom is the timeline's: either chart's zoom moves the other.
    onView: timeline ? (a, b) => timeline.setView(a, b) : null,
  });
  M.replay.same = same.map((j) => (j >= 0 ? runs[j].conf : null));
  if (timeline) {
    timeline.followers.push((a, b) => M.replay.follow(a, b));
    M.replay.follow(timeline.a, timeline.b);  // a view from the page's address
  }
}

// Step curves that share an x axis (the replay runs): uPlot draws them from all their points, so
// zooming redraws from the full data. opts: readout(x, values at x) as the cursor moves (x null
// when it leaves), onView(a, b) after the user zoomed; follow(a, b) shows [a, b] without onView.
function lineChart(host, series, span, kind, opts = {}) {
  const xs = [...new Set([0, span].concat(...series.map((s) => s.x)))].sort((p, q) => p - q);
  const data = [xs];
  let top = 1;
  for (const s of series) {
    const y = new Array(xs.length).fill(null);
    let j = 0, last = s.y.length ? s.y[0] : 0;
    for (let i = 0; i < xs.length; i++) {
      while (j < s.x.length && s.x[j] <= xs[i]) last = s.y[j++];
      y[i] = last;
      top = Math.max(top, last);
    }
    data.push(y);
  }
  let axis = byteAxis(top), ticks = null, view = [0, span], guard = false;
  const stepped = uPlot.paths.stepped({ align: 1 });
  let chart = null;
  // Each curve's value at x: the last point at or before it (the curves are steps).
  const valuesAt = (x) => {
    let lo = 0, hi = xs.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (xs[m] <= x) lo = m; else hi = m - 1; }
    return data.slice(1).map((y) => y[lo]);
  };
  const u = new uPlot({
    width: Math.max(320, host.clientWidth || 900), height: 280, legend: { show: false },
    scales: { x: { time: false, auto: false, min: 0, max: span }, y: { auto: false, min: 0, max: axis.top } },
    axes: [
      { stroke: "#667085", grid: { show: false }, size: 36,
        splits: (u, i, lo, hi) => { ticks = xAxis(lo, hi, kind, Math.max(3, u.bbox.width / devicePixelRatio / 120)); return ticks.ticks; },
        values: (u, s) => s.map((v) => ticks.label(v)) },
      { stroke: "#667085", grid: { stroke: "#eef0f3" }, ticks: { show: false }, size: 78,
        splits: () => axis.ticks, values: (u, s) => s.map((v) => axis.label(v)) },
    ],
    series: [{}].concat(series.map((s) => ({ stroke: s.color, width: s.dash ? 2 : 1.5, dash: s.dash || undefined, paths: stepped, points: { show: false }, spanGaps: true }))),
    cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false }, y: false,
      bind: { dblclick: () => () => { setX(0, span, true); return null; } } },
    hooks: {
      setScale: [(u, key) => { if (key === "x" && !guard) setX(u.scales.x.min, u.scales.x.max, true); }],
      setCursor: [(u) => {
        if (!opts.readout) return;
        const left = u.cursor.left;
        if (left == null || left < 0) { if (chart) chart.readout = null; opts.readout(null, null); return; }
        const x = Math.max(0, Math.min(span, u.posToVal(left, "x"))), values = valuesAt(x);
        if (chart) chart.readout = { x, values };
        opts.readout(x, values);
      }],
    },
  }, data, host);
  chart = u;
  if (opts.readout) opts.readout(null, null);
  function setX(a, b, fromUser) {
    a = Math.max(0, a); b = Math.min(span, b);
    if (b - a < 1e-6) return;
    view = [a, b];
    chart.view = view;
    let m = 1;
    for (let s = 1; s < data.length; s++) for (let i = 0; i < xs.length; i++) {
      if ((i + 1 < xs.length ? xs[i + 1] : span) >= a && xs[i] <= b) m = Math.max(m, data[s][i]);
    }
    axis = byteAxis(m);
    guard = true;
    u.batch(() => { u.setScale("x", { min: a, max: b }); u.setScale("y", { min: 0, max: axis.top }); });
    guard = false;
    if (fromUser && chart && opts.onView) opts.onView(a, b);
  }
  u.follow = (a, b) => setX(a, b, false);
  u.valuesAt = valuesAt;
  u.view = view;
  u.over.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = u.over.getBoundingClientRect(), at = u.posToVal(e.clientX - r.left, "x");
    const f = Math.exp(Math.max(-1, Math.min(1, e.deltaY * 0.002)));
    setX(at - (at - view[0]) * f, at + (view[1] - at) * f, true);
  }, { passive: false });
  new ResizeObserver(() => { if (Math.abs(host.clientWidth - u.width) >= 1) u.setSize({ width: Math.max(320, host.clientWidth), height: u.height }); }).observe(host);
  return u;
}

// Past the devices drawn in full (a file of more than 64), the others: a row each, largest
// reserved peak first; the first 1,000 rows, the rest counted (every device is in the data).
function renderOtherDevices(o) {
  const n = o.device.length, shown = Math.min(n, 1000);
  const sec = section("Other devices", "other-devices", null, "other-devices");
  sec.append(note(fmtCountOf(D.devices.length + n, "device") + ": the " + fmtCount(o.drawn_at_most) +
    " with the largest reserved peaks, and every device with an OOM, are drawn above; the other " + fmtCount(n) +
    " are listed here. `memsnap summary --device N FILE` describes one of them, `memsnap timeline --device N FILE` charts it."));
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => o.peak_reserved[b] - o.peak_reserved[a] || o.peak_live[b] - o.peak_live[a] || o.device[a] - o.device[b]);
  const t = h("table", { class: "devices" }, h("thead", {}, h("tr", {}, h("th", { text: "device" }), h("th", { class: "n", text: "trace events" }),
    h("th", { class: "n", text: "peak live" }), h("th", { class: "n", text: "peak reserved" }), h("th", { class: "n", text: "live at end" }),
    h("th", { class: "n", text: "reserved at end" }))));
  const body = h("tbody");
  for (let k = 0; k < shown; ++k) {
    const i = order[k];
    body.append(h("tr", {}, h("td", { text: String(o.device[i]) }), h("td", { class: "n", text: fmtCount(o.events[i]) }),
      h("td", { class: "n", text: fmtBytes(o.peak_live[i]) }), h("td", { class: "n", text: fmtBytes(o.peak_reserved[i]) }),
      h("td", { class: "n", text: fmtBytes(o.end_live[i]) }), h("td", { class: "n", text: fmtBytes(o.end_reserved[i]) })));
  }
  t.append(body);
  sec.append(h("div", { class: "table-wrap" }, t));
  if (shown < n) sec.append(note("\u2026 " + fmtCountOf(n - shown, "more device") + " (`memsnap summary FILE` lists every device)."));
}

function renderSingle() {
  const file = D.file;
  const tables = { frames: D.frames, stacks: D.stacks, kinds: D.frame_kinds, sites: D.band_sites, categories: D.category_names, rules: D.category_rules };
  document.title = "memsnap report: " + file.path.split("/").pop();
  document.getElementById("meta").replaceChildren(breakable(file.path), " \u00b7 " + fmtBytes(file.file_bytes) + " \u00b7 " +
    fmtCountOf(file.segments, "segment") + " \u00b7 " + fmtCountOf(file.blocks, "block") + " \u00b7 " + fmtCountOf(file.events, "trace event") +
    (file.alloc_conf ? " \u00b7 PYTORCH_CUDA_ALLOC_CONF=" + file.alloc_conf : ""));
  M.shared = sharedTimeAxis(D.devices);
  for (const dev of D.devices) renderDevice(dev, tables);
  if (D.other_devices) renderOtherDevices(D.other_devices);
  const ps = D.peak_sites;
  const sp = section(ps.moment === "peak" ? "Alive at the peak, by allocation site" : "Alive at the end, by allocation site", "peak-sites", null, "sites");
  sp.append(note(fmtBytes(ps.total_bytes) + " in " + fmtCountOf(ps.total_count, "block") +
    (ps.moment === "peak" ? " (each device at the peak of its live curve above)." : ".")));
  sp.append(siteTable(ps, tables));
  const as = D.alloc_sites;
  const sa = section("Top allocation sites over the trace", "alloc-sites", null, "sites");
  sa.append(note(fmtBytes(as.total_bytes) + " allocated in " + fmtCountOf(as.total_count, "allocation") + " (every allocation counts once, live or freed)."));
  sa.append(siteTable(as, tables));
  if (D.replay) {
    renderReplay(section("Replay under other allocator settings", "replay", null, "replay"), D.replay,
      D.devices.find((d) => d.device === D.replay.device && d.tiles));
  }
  glossary();
}

try {
  if (D.mode === "diff") renderDiff(); else renderSingle();
  M.render_ms = performance.now();  // since the navigation started: load, parse and first draw
  document.body.dataset.rendered = "ok";
} catch (e) {
  M.errors.push(String(e && e.stack || e));
  document.body.dataset.jsError = String(e && e.stack || e);
  app.append(h("pre", { text: "memsnap report: the page failed to draw: " + e }));
}
