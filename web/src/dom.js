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
function card(k, v, title) {
  return h("div", { class: "card", title: title },
    h("div", { class: "k", text: k }), h("div", { class: "v", text: v }));
}
function section(title, id, parent) {
  const sec = h("section", { id: id }, h("h2", { text: title }));
  (parent || app).append(sec);
  return sec;
}
function note(text, cls) { return h("p", { class: "note" + (cls ? " " + cls : ""), text: text }); }
function swatch(color, label, title) {
  const sw = h("span", { class: "swatch" });
  sw.style.background = color;
  return h("span", { class: "legend-item", title: title }, sw, label);
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
// A stable colour per allocation stack (golden-angle hues, muted).
function stackColor(i) { return "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",55%,64%)"; }
const COLORS = {
  live: "#1f5fbf", reserved: "#b54708", peak: "#d92d20", oom: "#7a271a", rest: "#c5cbd6",
  cursor: "#101828", allocated: "#2e6fd1", pending: "#f79009", releasable: "#9fd8b4",
  stranded: "#f4a3a0", before: "#98a2b3", after: "#1f5fbf", grow: "#d92d20", shrink: "#039855",
};
// The frames of a stack index (into the page's stack table), innermost first.
function stackFrames(tables, idx) {
  if (idx == null || idx < 0) return null;
  return tables.stacks[idx].map((f) => tables.frames[f]);
}
function stackText(frames, limit) {
  if (frames == null) return "(no stack recorded)";
  if (frames.length === 0) return "(every frame filtered out)";
  const shown = limit ? frames.slice(0, limit) : frames;
  let t = shown.join("\n");
  if (shown.length < frames.length) t += "\n\u2026 " + (frames.length - shown.length) + " more";
  return t;
}
// A short stack for a tooltip: the Python frames when there are some, else the innermost ones.
function tipStack(frames) {
  if (frames == null || frames.length === 0) return stackText(frames);
  const py = frames.filter((t) => /\.py:/.test(t));
  if (py.length === 0 || py.length === frames.length) return stackText(frames, 8);
  return stackText(py, 8) + "\n(" + (frames.length - py.length) + " C++ frames not shown; click for all)";
}
// The view state in the URL's hash ("#t0=12.5,40&s0=1200"), so a zoomed view can be linked.
function hashParts() {
  const out = {};
  for (const kv of location.hash.replace(/^#/, "").split("&")) {
    const i = kv.indexOf("=");
    if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  }
  return out;
}
function getHashPart(key) { return hashParts()[key]; }
function setHashPart(key, value) {
  const parts = hashParts();
  if (value == null) delete parts[key]; else parts[key] = value;
  const text = Object.keys(parts).sort().map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(parts[k])).join("&");
  history.replaceState(null, "", text ? "#" + text : location.pathname + location.search);
}
