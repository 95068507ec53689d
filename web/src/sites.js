// Site tables: what was alive at the peak and what was allocated over the trace, by site.

// The frames of a row: indices into the page's frame texts (or texts already).
function rowFrames(r, tables) {
  const f = r.frames && r.frames.length ? r.frames : [r.key];
  return f.map((x) => (typeof x === "number" ? tables.frames[x] : x));
}
// The line a site is known by: its label (docs/attribution.md: the user's frame, the autograd node
// and operator, distinct within the table) and its category; opens to the whole stack.
function siteCell(frames, synthetic, row) {
  const head = row && row.site ? row.site : frames[0] || "";
  // Every row but "[N others]" has one category ("[no stack]" rows too: often the parameters).
  // Its hover names the rule that decided the category (docs/attribution.md, "Rules").
  const cat = row && row.category && !isOthersRow(row) ? h("span", { class: "note cat", text: " " + row.category.replace("_", " "),
    title: row.category_rule ? "decided by the rule " + row.category_rule + " (most of its bytes)" : null }) : null;
  if (synthetic || frames.length <= 1) return h("span", {}, h("span", { class: "frame" }, breakable(head)), cat);
  const summary = h("summary", {}, h("span", { class: "frame" }, breakable(head)), cat);
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
      h("td", { class: "site" }, siteCell(rowFrames(r, tables), r.synthetic, r))));
  });
  t.append(body);
  return h("div", { class: "table-wrap" }, t);
}
