// Small DOM helpers, the tooltip and the colours shared by the charts.
const app = document.getElementById("app");
const tip = document.getElementById("tip");

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    if (k === "text") e.textContent = attrs[k];
    else if (attrs[k] != null) e.setAttribute(k, attrs[k]);
  }
  for (const c of kids) if (c != null && c !== false) e.append(c);
  return e;
}
// Text that may wrap only after path separators and punctuation, never inside a word.
function breakable(text) {
  const span = h("span");
  const parts = String(text).split(/(?<=[\/\\:;])/);
  parts.forEach((p, i) => {
    if (i > 0) span.append(h("wbr"));
    span.append(p);
  });
  return span;
}
// `sub`: a line under the figure (its moment), seen without hovering.
function card(k, v, title, sub) {
  const c = h("div", { class: "card", title: title },
    h("div", { class: "k", text: k }), h("div", { class: "v", text: v }));
  if (sub) c.append(h("div", { class: "s", text: sub }));
  return c;
}
// `name`: what the section is (data-section: timeline, categories, state, sites, replay,
// annotations...), the same on every device, for links and tests.
function section(title, id, parent, name) {
  const sec = h("section", { id: id, "data-section": name }, h("h2", { text: title }));
  (parent || app).append(sec);
  return sec;
}
function note(text, cls) { return h("p", { class: "note" + (cls ? " " + cls : ""), text: text }); }
function swatch(color, label, title) {
  const sw = h("span", { class: "swatch" });
  sw.style.background = color;
  return h("span", { class: "legend-item", title: title }, sw, label);
}
// The tooltip: text, or nodes (a label line in bold, then text).
function showTip(ev, content) {
  if (typeof content === "string") tip.textContent = content; else tip.replaceChildren(...content);
  tip.style.display = "block";
  const w = tip.offsetWidth, hgt = tip.offsetHeight;
  let x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
  if (y + hgt > window.innerHeight - 4) y = Math.max(4, ev.clientY - hgt - 14);
  tip.style.left = x + "px";
  tip.style.top = y + "px";
}
function hideTip() { tip.style.display = "none"; }
// ctx.measureText(text).width in ctx's font, remembered: labels of steps and annotations are
// measured on every redraw, thousands of them on a long trace.
const textWidths = new Map();
function textWidth(ctx, text) {
  const key = ctx.font + "\u0000" + text;
  let w = textWidths.get(key);
  if (w === undefined) { w = ctx.measureText(text).width; textWidths.set(key, w); }
  return w;
}
// A stable colour per allocation stack (golden-angle hues, muted).
function stackColor(i) { return "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",55%,64%)"; }
// The same colour as a pixel of an ImageData's Uint32Array (little-endian RGBA), cached.
const rgbaCache = new Map();
function rgbaOf(i) {
  let v = rgbaCache.get(i);
  if (v !== undefined) return v;
  const hue = +((i * 137.508) % 360).toFixed(1), s = 0.55, l = 0.64;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => { const k = (n + hue / 30) % 12; return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)))); };
  v = ((255 << 24) | (f(4) << 16) | (f(8) << 8) | f(0)) >>> 0;
  rgbaCache.set(i, v);
  return v;
}
// A "#rrggbb" colour as such a pixel.
function rgbaOfCss(hex6) {
  const n = parseInt(hex6.slice(1), 16);
  return ((255 << 24) | ((n & 0xff) << 16) | (n & 0xff00) | (n >> 16)) >>> 0;
}
const COLORS = {
  live: "#1f5fbf", reserved: "#b54708", peak: "#d92d20", oom: "#7a271a", rest: "#c5cbd6",
  cursor: "#101828", allocated: "#2e6fd1", pending: "#f79009", releasable: "#9fd8b4",
  stranded: "#f4a3a0", before: "#98a2b3", after: "#1f5fbf", grow: "#d92d20", shrink: "#039855",
};
function stackText(frames, limit) {
  if (frames == null) return "(no stack recorded)";
  if (frames.length === 0) return "(every frame filtered out)";
  const shown = limit ? frames.slice(0, limit) : frames;
  let t = shown.join("\n");
  if (shown.length < frames.length) t += "\n\u2026 " + (frames.length - shown.length) + " more";
  return t;
}
// A stack as the attribution model reads it (docs/attribution.md): the frames of the user's own
// code, then library Python, native code that can own memory (autograd nodes, operators) and
// machinery (allocator, dispatcher, interpreter), each innermost first. tables.kinds has one
// character per frame text: 0 user, 1 library, 2 native, 3 machinery, 4 unknown.
function stackParts(tables, idx) {
  if (idx == null || idx < 0) return null;
  const p = { all: [], user: [], library: [], native: [], machinery: [] };
  for (const f of tables.stacks[idx]) {
    const text = tables.frames[f];
    let k = tables.kinds ? tables.kinds[f] : "4";
    if (k === "4" || k == null) k = /\.py:/.test(text) ? "1" : "2";
    p.all.push(text);
    [p.user, p.library, p.native, p.machinery][+k].push(text);
  }
  return p;
}
// "…/model/net.py:15 forward" from "/home/me/proj/model/net.py:15:forward": a Python frame as a
// label names it (the last `keep` path components); a native frame by its function.
function frameShort(text, keep) {
  const m = /^(.*\.py):(\d+):([^:]*)$/.exec(text);
  if (!m) {
    // A native frame: its function, without the "file:0:" its text starts with.
    const n = /^[^:]*:\d+:(.+)$/.exec(text);
    const name = n ? n[1] : text;
    return name.length > 110 ? name.slice(0, 109) + "\u2026" : name;
  }
  const parts = m[1].split(/[\/\\]/);
  const n = keep || 3;
  const path = parts.length > n ? "\u2026/" + parts.slice(-n).join("/") : m[1];
  return path + ":" + m[2] + " " + m[3];
}
// What a stack's hover shows below the label: the user's frames (or, without any, the innermost
// library and native frames), then how many frames of each other kind the whole stack has.
function stackSummary(p, limit) {
  if (p == null) return "(no stack recorded)";
  if (p.all.length === 0) return "(every frame filtered out)";
  const n = limit || 6;
  let head, shown;
  if (p.user.length) {
    head = "your code, innermost first:";
    shown = p.user;
  } else {
    head = "no frame of your code; innermost frames:";
    shown = p.library.length ? p.library : p.native.length ? p.native : p.machinery;
  }
  const lines = shown.slice(0, n).map((t) => "  " + frameShort(t));
  if (shown.length > n) lines.push("  \u2026 " + (shown.length - n) + " more");
  const rest = [];
  const count = (list, what) => { const k = list === shown ? list.length - Math.min(n, list.length) : list.length; if (k) rest.push(k + " " + what); };
  if (shown !== p.user) count(p.user, "of your code");
  if (shown !== p.library) count(p.library, "library Python");
  if (shown !== p.native) count(p.native, "native");
  if (shown !== p.machinery) count(p.machinery, "allocator/dispatcher");
  return head + "\n" + lines.join("\n") + (rest.length ? "\nalso " + rest.join(", ") + " frames" : "");
}
// The view state in the URL's hash ("#t0=12.5,40&s0=1200"), so a zoomed view can be linked.
function hashParts() {
  if (hashPending) return Object.assign({}, hashPending);
  const out = {};
  for (const kv of location.hash.replace(/^#/, "").split("&")) {
    const i = kv.indexOf("=");
    if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  }
  return out;
}
function getHashPart(key) { return hashParts()[key]; }
// Written at most every 150 ms: a wheel notch each frame would otherwise replace the URL each time
// (a same-document navigation that cost as much as the redraw).
let hashPending = null;
function setHashPart(key, value) {
  if (!hashPending) {
    hashPending = hashParts();
    setTimeout(() => {
      const parts = hashPending;
      hashPending = null;
      const text = Object.keys(parts).sort().map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(parts[k])).join("&");
      history.replaceState(null, "", text ? "#" + text : location.pathname + location.search);
    }, 150);
  }
  if (value == null) delete hashPending[key]; else hashPending[key] = value;
}
