// Site tables: what was alive at the peak and what was allocated over the trace, by site.

// The frames of a row: indices into the page's frame texts (or texts already).
function rowFrames(r, tables) {
  const f = r.frames && r.frames.length ? r.frames : [r.key];
  return f.map((x) => (typeof x === "number" ? tables.frames[x] : x));
}
// The line a site is known by: its innermost Python frame when it has one (C++ allocator frames
// come first in stacks recorded with C++ context), else its innermost frame; opens to the stack.
function siteCell(frames, synthetic) {
  if (synthetic || frames.length <= 1) return h("span", { class: "frame" }, breakable(frames[0] || ""));
  const py = frames.findIndex((t) => /\.py:/.test(t));
  const head = py > 0 ? frames[py] : frames[0];
  const summary = h("summary", {}, h("span", { class: "frame" }, breakable(head)),
    py > 0 ? h("span", { class: "note", text: " (+" + py + " C++ frames inside)" }) : null);
  const pre = h("pre");
  frames.forEach((f, i) => { if (i) pre.append("\n"); pre.append(breakable(f)); });
  return h("details", {}, summary, pre);
}
function isOthersRow(r) { return r.synthetic && /^\[\d+ others\]$/.test(r.key); }

function siteTable(table, tables) {
  const t = h("table", { class: "sites" });
  t.append(h("thead", {}, h("tr", {}, h("th", { class: "n", text: "#" }), h("th", { class: "n", text: "bytes" }),
    h("th", { class: "n", text: "share" }), h("th", { class: "n", text: "count" }),
    h("th", { text: "site (click for the whole stack, innermost frame first)" }))));
  // The "[N others]" row sums the tail: it does not set the scale of the bars.
  let top = 1;
  for (const r of table.rows) if (!isOthersRow(r)) top = Math.max(top, r.bytes);
  const body = h("tbody");
  table.rows.forEach((r, i) => {
    const bar = h("span", { class: "bar" });
    bar.style.width = Math.max(1, Math.min(80, (80 * r.bytes) / top)) + "px";
    if (isOthersRow(r)) bar.classList.add("others");
    body.append(h("tr", {}, h("td", { class: "n", text: String(i + 1) }),
      h("td", { class: "n" }, bar, " " + fmtBytes(r.bytes)),
      h("td", { class: "n", text: table.total_bytes > 0 ? fmtPct(r.bytes / table.total_bytes) : "" }),
      h("td", { class: "n", text: fmtCount(r.count) }),
      h("td", { class: "site" }, siteCell(rowFrames(r, tables), r.synthetic))));
  });
  t.append(body);
  return h("div", { class: "table-wrap" }, t);
}
