// The report page's script: plain JavaScript, no libraries, no network. It reads the JSON embedded
// by WriteHtmlPage and draws inline SVG. When done it sets <body data-rendered="ok">; an error sets
// data-js-error (the browser test checks both).
#include "report/html_report_internal.h"

namespace memsnap::report::internal {

namespace {
constexpr const char* kScript = R"MSJS("use strict";
window.addEventListener("error", (e) => {
  document.body.dataset.jsError = String(e.message || e);
});
(function () {
const D = JSON.parse(document.getElementById("memsnap-data").textContent);
const NS = "http://www.w3.org/2000/svg";
const app = document.getElementById("app");
const tip = document.getElementById("tip");
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

function fmtBytes(n) {
  const neg = n < 0;
  let v = Math.abs(n), i = 0;
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  const s = i === 0 ? v.toFixed(0) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
  return (neg ? "-" : "") + s + " " + UNITS[i];
}
function fmtDelta(n) { return (n > 0 ? "+" : "") + fmtBytes(n); }
function fmtCount(n) { return Number(n).toLocaleString("en-US"); }
function fmtPct(f) { return (100 * f).toFixed(1) + "%"; }
function fmtX(x, hasTime) {
  if (!hasTime) return "event " + fmtCount(Math.round(x));
  const a = Math.abs(x);
  if (a >= 1e6) return (x / 1e6).toFixed(a >= 1e8 ? 1 : 3) + " s";
  if (a >= 1e3) return (x / 1e3).toFixed(1) + " ms";
  return Math.round(x) + " \u00b5s";
}
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
  }
  for (const c of kids) if (c != null) e.append(c);
  return e;
}
function s(tag, attrs) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs || {}) {
    if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
  }
  return e;
}
function maxOf(a) { let m = 0; for (const v of a) if (v > m) m = v; return m; }
function niceStep(span, n) {
  const raw = span / Math.max(n, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
function byteTicks(max) {
  let unit = 1;
  while (max / unit >= 1024 && unit < Math.pow(1024, 5)) unit *= 1024;
  const step = niceStep(max / unit, 5) * unit, out = [];
  for (let v = 0; v <= max * 1.0001; v += step) out.push(v);
  return out;
}
function color(i) { return "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",58%,62%)"; }
function stackFrames(idx) {
  if (idx == null || idx < 0) return null;
  return D.stacks[idx].map((f) => D.frames[f]);
}
function stackText(frames, limit) {
  if (frames == null) return "(no stack recorded)";
  if (frames.length === 0) return "(empty stack)";
  const shown = limit ? frames.slice(0, limit) : frames;
  let t = shown.join("\n");
  if (shown.length < frames.length) t += "\n\u2026 " + (frames.length - shown.length) + " more";
  return t;
}
// Short stack for a tooltip: the Python frames when there are any, else the innermost ones.
function tipStack(frames) {
  if (frames == null || frames.length === 0) return stackText(frames);
  const py = frames.filter((t) => /\.py:/.test(t));
  if (py.length === 0 || py.length === frames.length) return stackText(frames, 10);
  return stackText(py, 10) + "\n(" + (frames.length - py.length) + " C++ frames not shown; click for all)";
}
function showTip(ev, text) {
  tip.textContent = text;
  tip.style.display = "block";
  const w = tip.offsetWidth, hgt = tip.offsetHeight;
  let x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
  if (y + hgt > window.innerHeight - 4) y = Math.max(4, ev.clientY - hgt - 14);
  tip.style.left = x + "px";
  tip.style.top = y + "px";
}
function hideTip() { tip.style.display = "none"; }
function card(k, v) { return h("div", { class: "card" }, h("div", { class: "k", text: k }), h("div", { class: "v", text: v })); }
function section(title, id) {
  const sec = h("section", { id: id }, h("h2", { text: title }));
  app.append(sec);
  return sec;
}
function stepPath(vals, X, Y) {
  let d = "M" + X(0) + " " + Y(vals[0]);
  for (let c = 0; c < vals.length; c++) {
    if (c > 0) d += "V" + Y(vals[c]);
    d += "H" + X(c + 1);
  }
  return d;
}
function chartFrame(host, height) {
  const W = Math.max(640, Math.floor(host.clientWidth || 1000)), H = height;
  const m = { l: 70, r: 34, t: 16, b: 30 };
  const svg = s("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H });
  return { svg, W, H, m, pw: W - m.l - m.r, ph: H - m.t - m.b };
}
function yAxis(f, ymax, Y) {
  const g = s("g", { class: "grid" });
  for (const v of byteTicks(ymax)) {
    g.append(s("line", { x1: f.m.l, x2: f.W - f.m.r, y1: Y(v), y2: Y(v) }));
    g.append(s("text", { x: f.m.l - 6, y: Y(v) + 4, "text-anchor": "end", text: fmtBytes(v) }));
  }
  f.svg.append(g);
}
function xAxis(f, lo, hi, hasTime, xOf) {
  const g = s("g", { class: "axis" });
  const step = niceStep(hi - lo || 1, 7);
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
    g.append(s("line", { x1: xOf(v), x2: xOf(v), y1: f.H - f.m.b, y2: f.H - f.m.b + 4 }));
    g.append(s("text", { x: xOf(v), y: f.H - f.m.b + 16, "text-anchor": "middle", text: fmtX(v, hasTime) }));
  }
  g.append(s("line", { x1: f.m.l, x2: f.W - f.m.r, y1: f.H - f.m.b, y2: f.H - f.m.b }));
  f.svg.append(g);
}
function legend(items) {
  const l = h("div", { class: "legend" });
  for (const [label, style] of items) {
    const i = h("i");
    i.setAttribute("style", style);
    l.append(h("span", {}, i, label));
  }
  return l;
}

// ---- single file: the timeline with stacked bands ----
function drawTimeline(host, dev, details) {
  const cv = dev.curve, n = cv.live_max.length;
  const f = chartFrame(host, 360);
  const ymax = Math.max(maxOf(cv.reserved_max), maxOf(cv.live_max), 1) * 1.06;
  const X = (c) => (f.m.l + (c / n) * f.pw).toFixed(2);
  const Y = (v) => (f.m.t + f.ph - (v / ymax) * f.ph).toFixed(2);
  const span = cv.x_hi - cv.x_lo || 1;
  const xOf = (x) => (f.m.l + ((x - cv.x_lo) / span) * f.pw).toFixed(2);
  yAxis(f, ymax, Y);
  f.svg.setAttribute("class", "timeline");
  // The folded band (every lifetime not drawn on its own) sits on top of the bands.
  let d = stepPath(cv.live_max, X, Y);
  for (let c = n - 1; c >= 0; c--) d += "V" + Y(cv.live_max[c] - cv.rest[c]) + "H" + X(c);
  f.svg.append(s("path", { class: "rest", d: d + "Z" }));
  const bandEls = [];
  dev.bands.forEach((b, k) => {
    const segs = [];
    for (let i = 0; i < b.bottoms.length; i += 2) {
      const c = b.bottoms[i], end = i + 2 < b.bottoms.length ? b.bottoms[i + 2] : b.c1 + 1;
      segs.push([c, end, b.bottoms[i + 1]]);
    }
    let p = "M" + X(segs[0][0]) + " " + Y(segs[0][2]);
    for (const [c0, c1, y] of segs) p += "V" + Y(y) + "H" + X(c1);
    for (let i = segs.length - 1; i >= 0; i--) {
      const [c0, c1, y] = segs[i];
      p += "V" + Y(y + b.size) + "H" + X(c0);
    }
    p += "Z";
    const el = s("path", { class: "band", d: p, fill: color(b.stack >= 0 ? b.stack : 1000 + k) });
    el.dataset.band = k;
    bandEls.push(el);
    f.svg.append(el);
  });
  f.svg.append(s("path", { class: "livemin", d: stepPath(cv.live_min, X, Y) }));
  f.svg.append(s("path", { class: "live", d: stepPath(cv.live_max, X, Y) }));
  f.svg.append(s("path", { class: "reserved", d: stepPath(cv.reserved_max, X, Y) }));
  if (dev.peak) {
    const px = xOf(dev.peak.x);
    f.svg.append(s("line", { class: "peak", x1: px, x2: px, y1: f.m.t, y2: f.H - f.m.b }));
    const right = px > f.W - 200;
    f.svg.append(s("text", { class: "peak", x: right ? px - 5 : Number(px) + 5, y: f.m.t + 11,
                             "text-anchor": right ? "end" : "start",
                             text: "peak " + fmtBytes(dev.peak.bytes) + " at " + fmtX(dev.peak.x, cv.has_time) }));
  }
  xAxis(f, cv.x_lo, cv.x_hi, cv.has_time, xOf);
  const cross = s("line", { class: "cross", y1: f.m.t, y2: f.H - f.m.b, x1: -10, x2: -10 });
  f.svg.append(cross);
  const bandText = (b) => {
    const alloc = b.alloc_x == null ? "before the trace" : fmtX(b.alloc_x, cv.has_time);
    const free = b.free_x == null ? "still live at the end" : fmtX(b.free_x, cv.has_time);
    let life = "";
    if (b.alloc_x != null && b.free_x != null) life = " (" + fmtX(b.free_x - b.alloc_x, cv.has_time).replace("event ", "") + (cv.has_time ? "" : " events") + ")";
    return fmtBytes(b.size) + " (" + fmtCount(b.size) + " B requested, " + fmtBytes(b.rounded) + " block)\n" +
      "allocated " + alloc + ", freed " + free + life + "\n" +
      "address " + b.addr + " stream " + b.stream + " \u00b7 " + b.class;
  };
  // Allocated before the trace began: only the free was recorded, so the stack is the free's.
  const stackLabel = (b) => (b.class === "pre-window" ? "stack of the free (allocated before the trace):\n" : "");
  let selected = null;
  f.svg.addEventListener("mousemove", (ev) => {
    const r = f.svg.getBoundingClientRect();
    const px = ev.clientX - r.left;
    const c = Math.floor(((px - f.m.l) / f.pw) * n);
    if (c < 0 || c >= n) { cross.setAttribute("x1", -10); cross.setAttribute("x2", -10); hideTip(); return; }
    cross.setAttribute("x1", px); cross.setAttribute("x2", px);
    const t = ev.target;
    if (t.dataset && t.dataset.band != null) {
      const b = dev.bands[t.dataset.band];
      showTip(ev, bandText(b) + "\n\n" + stackLabel(b) + tipStack(stackFrames(b.stack)));
      return;
    }
    const x = cv.x_lo + ((c + 0.5) / n) * span;
    showTip(ev, "around " + fmtX(x, cv.has_time) + "\nlive " + fmtBytes(cv.live_max[c]) +
      (cv.live_min[c] !== cv.live_max[c] ? " (min " + fmtBytes(cv.live_min[c]) + ")" : "") +
      "\nreserved " + fmtBytes(cv.reserved_max[c]) + "\nsmaller allocations " + fmtBytes(cv.rest[c]));
  });
  f.svg.addEventListener("mouseleave", () => { hideTip(); cross.setAttribute("x1", -10); cross.setAttribute("x2", -10); });
  f.svg.addEventListener("click", (ev) => {
    const t = ev.target;
    if (!(t.dataset && t.dataset.band != null)) return;
    if (selected) selected.classList.remove("sel");
    selected = t;
    t.classList.add("sel");
    const b = dev.bands[t.dataset.band];
    details.replaceChildren(h("b", { text: bandText(b).split("\n")[0] }),
      h("div", { class: "note", text: bandText(b).split("\n").slice(1).join(" \u00b7 ") }),
      h("pre", { text: stackLabel(b) + stackText(stackFrames(b.stack)) }));
  });
  host.replaceChildren(f.svg);
}

// Frames of a site row: indices into D.frames (single page) or texts (diff page).
function framesOf(r) {
  const f = r.frames && r.frames.length ? r.frames : [r.key];
  return f.map((x) => (typeof x === "number" ? D.frames[x] : x));
}
// The line a site is known by: its label and category (docs/attribution.md), the stack on click.
function siteCell(frames, synthetic, r) {
  const head = (r && r.site ? r.site : frames[0] || "") + (r && r.category && !synthetic ? "  [" + r.category + "]" : "");
  if (synthetic || frames.length <= 1) return h("span", { text: head });
  return h("details", {}, h("summary", { text: head }), h("pre", { text: frames.join("\n") }));
}

function siteTable(rows, total) {
  const t = h("table", { class: "sites" });
  t.append(h("tr", {}, h("th", { class: "n", text: "#" }), h("th", { class: "n", text: "bytes" }),
    h("th", { class: "n", text: "share" }), h("th", { class: "n", text: "count" }), h("th", { text: "site (click for the whole stack, innermost frame first)" })));
  const top = rows.length ? Math.max(...rows.map((r) => r.bytes), 1) : 1;
  rows.forEach((r, i) => {
    const site = siteCell(framesOf(r), r.synthetic, r);
    const bar = h("span", { class: "bar" });
    bar.style.width = Math.max(1, (80 * r.bytes) / top) + "px";
    t.append(h("tr", {}, h("td", { class: "n", text: String(i + 1) }),
      h("td", { class: "n" }, bar, " " + fmtBytes(r.bytes)),
      h("td", { class: "n", text: total > 0 ? fmtPct(r.bytes / total) : "" }),
      h("td", { class: "n", text: fmtCount(r.count) }), h("td", { class: "site" }, site)));
  });
  return t;
}

function segmentMap(sec, seg) {
  sec.append(h("div", { class: "cards" }, card("reserved", fmtBytes(seg.reserved_bytes)),
    card("allocated", fmtBytes(seg.allocated_bytes)), card("cached free", fmtBytes(seg.free_bytes)),
    card("largest free block", fmtBytes(seg.largest_free_bytes)),
    card("fragmentation", seg.fragmentation != null ? fmtPct(seg.fragmentation)
      : seg.free_bytes > 0 ? fmtPct(1 - seg.largest_free_bytes / seg.free_bytes) : "0%")));
  if (seg.frag) for (const [k, v] of seg.frag) sec.lastChild.append(card(k, v));
  const states = [["allocated", "var(--live)"], ["pending free", "#f79009"], ["free (cached)", "#e4e7ec"]];
  const fills = ["#1f5fbf", "#f79009", "#e4e7ec"];
  sec.append(h("div", { class: "note" }, ...states.map(([k, c]) => {
    const sw = h("span", { class: "swatch" });
    sw.style.background = c;
    return h("span", { style: "margin-right:14px" }, sw, k);
  })));
  const host = h("div", { class: "chart" });
  sec.append(host);
  const rowH = 9, gap = 3;
  const f = chartFrame(host, seg.segments.length * (rowH + gap) + 10);
  f.svg.setAttribute("class", "segmap");
  const lw = 150, w = f.W - lw - 10;
  seg.segments.forEach((sg, i) => {
    const y = 5 + i * (rowH + gap);
    f.svg.append(s("text", { x: lw - 8, y: y + 8, "text-anchor": "end",
      text: fmtBytes(sg.size) + (sg.expandable ? " exp" : "") + " dev" + sg.device, style: "font-size:9px" }));
    f.svg.append(s("rect", { class: "seg-bg", x: lw, y: y, width: w, height: rowH }));
    let off = 0;
    for (let k = 0; k < sg.runs.length; k += 2) {
      const st = sg.runs[k], sz = sg.runs[k + 1];
      const x0 = lw + (off / sg.size) * w, x1 = lw + ((off + sz) / sg.size) * w;
      const r = s("rect", { x: x0.toFixed(2), y: y, width: Math.max(0.6, x1 - x0).toFixed(2), height: rowH, fill: fills[st] });
      r.dataset.tip = states[st][0] + " " + fmtBytes(sz) + " at +" + fmtBytes(off) + "\nsegment " + sg.address +
        " (" + fmtBytes(sg.size) + ", stream " + sg.stream + ", " + sg.pool + ")";
      f.svg.append(r);
      off += sz;
    }
  });
  f.svg.addEventListener("mousemove", (ev) => { if (ev.target.dataset.tip) showTip(ev, ev.target.dataset.tip); else hideTip(); });
  f.svg.addEventListener("mouseleave", hideTip);
  host.append(f.svg);
  if (seg.omitted > 0) sec.append(h("div", { class: "note", text: seg.omitted + " smaller segments not shown." }));
}

function drawLines(host, series, hasTime, xLabel) {
  const f = chartFrame(host, 300);
  let ymax = 1, xlo = Infinity, xhi = -Infinity;
  for (const sr of series) {
    ymax = Math.max(ymax, maxOf(sr.values));
    xlo = Math.min(xlo, sr.x_lo); xhi = Math.max(xhi, sr.x_hi);
  }
  ymax *= 1.06;
  const Y = (v) => (f.m.t + f.ph - (v / ymax) * f.ph).toFixed(2);
  const span = xhi - xlo || 1;
  const xOf = (x) => (f.m.l + ((x - xlo) / span) * f.pw).toFixed(2);
  yAxis(f, ymax, Y);
  f.svg.setAttribute("class", "lines");
  for (const sr of series) {
    const n = sr.values.length, w = (sr.x_hi - sr.x_lo) / n;
    const X = (c) => xOf(sr.x_lo + c * w);
    const p = s("path", { d: stepPath(sr.values, X, Y), fill: "none", stroke: sr.color, "stroke-width": 1.4 });
    if (sr.dash) p.setAttribute("stroke-dasharray", "5 3");
    f.svg.append(p);
  }
  xAxis(f, xlo, xhi, hasTime, xOf);
  host.append(f.svg);
}

function renderSingle() {
  const file = D.file;
  document.getElementById("meta").textContent = file.path + " \u00b7 " + fmtBytes(file.file_bytes) + " \u00b7 " +
    fmtCount(file.segments) + " segments \u00b7 " + fmtCount(file.blocks) + " blocks \u00b7 " + fmtCount(file.events) + " trace events" +
    (file.alloc_conf ? " \u00b7 PYTORCH_CUDA_ALLOC_CONF=" + file.alloc_conf : "");
  for (const dev of D.devices) {
    const sec = section("Device " + dev.device + ": memory timeline", "timeline-" + dev.device);
    const cards = h("div", { class: "cards" });
    if (dev.peak) cards.append(card("peak live", fmtBytes(dev.peak.bytes)), card("peak reserved", fmtBytes(dev.peak.reserved_bytes)));
    cards.append(card("live at end", fmtBytes(dev.end_live)), card("reserved at end", fmtBytes(dev.end_reserved)),
      card("trace events", fmtCount(dev.num_events)), card("lifetimes", fmtCount(dev.lifetimes)));
    sec.append(cards);
    if (!dev.curve) {
      sec.append(h("div", { class: "note", text: "This device has no trace events: only its final state is known (record with torch.cuda.memory._record_memory_history() to get a timeline)." }));
      continue;
    }
    const host = h("div", { class: "chart" });
    const details = h("div", { class: "details" }, h("span", { class: "note", text: "Click a band to see its allocation stack." }));
    sec.append(host, legend([["live (max per pixel)", "background:var(--live)"], ["live (min)", "background:var(--live);opacity:.35"],
      ["reserved", "background:var(--reserved)"], ["peak", "background:var(--peak)"],
      [dev.bands.length + " largest lifetimes as bands; the grey band folds the rest", "background:var(--rest)"]]), details);
    drawTimeline(host, dev, details);
    if (dev.unreconciled_bytes) sec.append(h("div", { class: "note", text: fmtBytes(dev.unreconciled_bytes) + " of the final state is not explained by the trace (allocated before it began); it is counted from the start." }));
  }
  const ps = D.peak_sites;
  const sp = section(ps.moment === "peak" ? "Alive at the peak, by allocation site" : "Alive at the end, by allocation site", "peak-sites");
  sp.append(h("div", { class: "note", text: fmtBytes(ps.total_bytes) + " in " + fmtCount(ps.total_count) + " blocks (each device at its own peak)." }));
  sp.append(siteTable(ps.rows, ps.total_bytes));
  const as = D.alloc_sites;
  const sa = section("Top allocation sites over the trace", "alloc-sites");
  sa.append(h("div", { class: "note", text: fmtBytes(as.total_bytes) + " allocated in " + fmtCount(as.total_count) + " lifetimes (every allocation counts once, live or freed)." }));
  sa.append(siteTable(as.rows, as.total_bytes));
  const ss = section("Segment map and fragmentation (final state)", "segments");
  if (D.segments && D.segments.segments.length) segmentMap(ss, D.segments);
  else ss.append(h("div", { class: "note", text: D.segments ? "The snapshot has no segments." : "Not available in this build." }));
  if (D.replay) renderReplay(section("Replay under other allocator settings", "replay"), D.replay);
}

function renderReplay(sec, rp) {
  const colors = ["#1f5fbf", "#d92d20", "#039855", "#7a5af8", "#f79009", "#0e9384"];
  const t = h("table", {}, h("tr", {}, h("th", { text: "configuration" }), h("th", { class: "n", text: "peak reserved" }),
    h("th", { class: "n", text: "vs recorded" }), h("th", { text: "" })));
  rp.runs.forEach((r, i) => {
    const d = r.peak_reserved - rp.runs[0].peak_reserved;
    t.append(h("tr", {}, h("td", { class: "site", text: r.conf }), h("td", { class: "n", text: fmtBytes(r.peak_reserved) }),
      h("td", { class: "n " + (d > 0 ? "grow" : d < 0 ? "shrink" : ""), text: i === 0 ? "" : fmtDelta(d) }),
      h("td", { class: "note", text: r.note || "" })));
  });
  sec.append(t);
  const host = h("div", { class: "chart" });
  sec.append(host);
  const series = rp.runs.filter((r) => r.curve).map((r, i) => ({ values: r.curve.reserved_max, x_lo: r.curve.x_lo, x_hi: r.curve.x_hi, color: colors[i % colors.length] }));
  if (series.length) {
    drawLines(host, series, rp.runs[0].curve ? rp.runs[0].curve.has_time : false);
    sec.append(legend(rp.runs.filter((r) => r.curve).map((r, i) => ["reserved: " + r.conf, "background:" + colors[i % colors.length]])));
  }
}

// ---- two files: the diff view ----
function renderDiff() {
  const A = D.before, B = D.after;
  document.getElementById("title").textContent = "memsnap diff";
  document.getElementById("meta").textContent = "before: " + A.path + " \u00b7 after: " + B.path;
  const top = section("Totals", "totals");
  const dl = D.live_bytes[1] - D.live_bytes[0];
  top.append(h("div", { class: "cards" }, card("live before (" + D.moment + ")", fmtBytes(D.live_bytes[0])),
    card("live after (" + D.moment + ")", fmtBytes(D.live_bytes[1])), card("delta", fmtDelta(dl)),
    card("reserved before", fmtBytes(A.reserved_bytes)), card("reserved after", fmtBytes(B.reserved_bytes)),
    card("sites only before / after", D.sites_only_before + " / " + D.sites_only_after)));
  const devs = new Map();
  for (const [side, F] of [["before", A], ["after", B]]) for (const d of F.devices) {
    if (!devs.has(d.device)) devs.set(d.device, {});
    devs.get(d.device)[side] = d;
  }
  for (const [dev, pair] of [...devs.entries()].sort((a, b) => a[0] - b[0])) {
    const sec = section("Device " + dev + ": before and after", "diff-timeline-" + dev);
    const curves = [pair.before && pair.before.curve, pair.after && pair.after.curve];
    if (!curves[0] && !curves[1]) { sec.append(h("div", { class: "note", text: "No trace events on this device in either file." })); continue; }
    const bothTime = curves.every((c) => !c || c.has_time);
    const series = [];
    const norm = (c, vals, color, dash) => {
      // Without times on both sides, the x axis is the share of each trace (0-100%).
      const lo = bothTime ? c.x_lo : 0, hi = bothTime ? c.x_hi : 100;
      series.push({ values: vals, x_lo: lo, x_hi: hi, color, dash });
    };
    if (curves[0]) { norm(curves[0], curves[0].live_max, "#98a2b3"); norm(curves[0], curves[0].reserved_max, "#98a2b3", true); }
    if (curves[1]) { norm(curves[1], curves[1].live_max, "#1f5fbf"); norm(curves[1], curves[1].reserved_max, "#1f5fbf", true); }
    const host = h("div", { class: "chart" });
    sec.append(host);
    drawLines(host, series, bothTime);
    sec.append(legend([["live before", "background:#98a2b3"], ["live after", "background:#1f5fbf"], ["reserved (dashed)", "background:#667085"]]));
    if (!bothTime) sec.append(h("div", { class: "note", text: "x axis: position in each trace (%), since a file has no event times." }));
  }
  const ss = section("Sites at the " + D.moment + ": before, after, delta", "diff-sites");
  ss.append(h("div", { class: "note", text: D.sites_total + " sites changed; " + D.sites_unchanged + " unchanged. Largest changes first." }));
  const t = h("table", { class: "sites" }, h("tr", {}, h("th", { class: "n", text: "before" }), h("th", { class: "n", text: "after" }),
    h("th", { class: "n", text: "delta" }), h("th", { text: "" }), h("th", { text: "site" })));
  const mx = Math.max(1, ...D.sites.map((r) => Math.abs(r.after - r.before)));
  for (const r of D.sites) {
    const d = r.after - r.before, bar = h("span", { class: "bar " + (d > 0 ? "grow" : "shrink") });
    bar.style.width = Math.max(1, (80 * Math.abs(d)) / mx) + "px";
    const site = siteCell(framesOf(r), r.synthetic, r);
    t.append(h("tr", {}, h("td", { class: "n", text: fmtBytes(r.before) }), h("td", { class: "n", text: fmtBytes(r.after) }),
      h("td", { class: "n " + (d > 0 ? "grow" : "shrink"), text: fmtDelta(d) }), h("td", {}, bar),
      h("td", { class: "site" }, site, r.presence !== "both" ? h("span", { class: "note", text: " (" + r.presence.replace("_", " ") + ")" }) : null)));
  }
  ss.append(t);
  const sc = section("Per device, pool and stream", "diff-scopes");
  const st = h("table", {}, h("tr", {}, h("th", { text: "scope" }), h("th", { class: "n", text: "reserved" }), h("th", { class: "n", text: "\u0394 reserved" }),
    h("th", { class: "n", text: "allocated" }), h("th", { class: "n", text: "\u0394 allocated" }), h("th", { class: "n", text: "segments" })));
  for (const r of D.scopes) {
    const dr = r.reserved[1] - r.reserved[0], da = r.allocated[1] - r.allocated[0];
    st.append(h("tr", {}, h("td", { text: r.scope }), h("td", { class: "n", text: fmtBytes(r.reserved[1]) }),
      h("td", { class: "n " + (dr > 0 ? "grow" : dr < 0 ? "shrink" : ""), text: fmtDelta(dr) }),
      h("td", { class: "n", text: fmtBytes(r.allocated[1]) }), h("td", { class: "n " + (da > 0 ? "grow" : da < 0 ? "shrink" : ""), text: fmtDelta(da) }),
      h("td", { class: "n", text: r.segments[0] + " \u2192 " + r.segments[1] })));
  }
  sc.append(st);
  if (D.settings.length) {
    const se = section("Allocator settings that differ", "diff-settings");
    const tt = h("table", {}, h("tr", {}, h("th", { text: "setting" }), h("th", { text: "before" }), h("th", { text: "after" })));
    for (const [k, a, b] of D.settings) tt.append(h("tr", {}, h("td", { text: k }), h("td", { text: a }), h("td", { text: b })));
    se.append(tt);
  }
}

try {
  if (D.mode === "diff") renderDiff(); else renderSingle();
  document.body.dataset.rendered = "ok";
} catch (e) {
  document.body.dataset.jsError = String(e && e.stack || e);
  app.append(h("pre", { text: "memsnap report: the page failed to draw: " + e }));
}
})();
)MSJS";
}  // namespace

const char* PageScript() { return kScript; }

}  // namespace memsnap::report::internal
