// The diff page: both files' timelines one above the other on one x axis (relative time, their
// steps, or the share of each trace), zoomed and hovered together; the sites that changed as a
// bar chart; totals per device, pool and stream; the settings that differ.

// Maps raw x to the aligned axis: relative time, steps (boundaries from the data), or share.
function alignment(dev, mode) {
  if (mode === "steps" && dev.steps) {
    const b = dev.steps.x, k = b.length - 1;
    const fwd = (x) => {
      if (x < b[0]) return (x - b[0]) / Math.max(b[1] - b[0], 1e-9);
      if (x >= b[k]) return k + (x - b[k]) / Math.max(b[k] - b[k - 1], 1e-9);
      let lo = 0, hi = k - 1;
      while (lo < hi) { const m = (lo + hi + 1) >> 1; if (b[m] <= x) lo = m; else hi = m - 1; }
      return lo + (x - b[lo]) / Math.max(b[lo + 1] - b[lo], 1e-9);
    };
    const inv = (s) => {
      if (s < 0) return b[0] + s * (b[1] - b[0]);
      if (s >= k) return b[k] + (s - k) * (b[k] - b[k - 1]);
      const i = Math.floor(s);
      return b[i] + (s - i) * (b[i + 1] - b[i]);
    };
    return { fwd, inv, kind: "steps" };
  }
  if (mode === "share") return { fwd: (x) => (100 * x) / dev.x_span, inv: (s) => (s * dev.x_span) / 100, kind: "share" };
  return identityMap(dev.has_time);
}

function renderDiff() {
  const A = D.before, B = D.after;
  document.title = "memsnap diff: " + A.path.split("/").pop() + " \u2192 " + B.path.split("/").pop();
  document.getElementById("title").textContent = "memsnap diff";
  document.getElementById("meta").replaceChildren("before: ", breakable(A.path), " \u00b7 after: ", breakable(B.path));
  const top = section("Totals", "totals", null, "totals");
  const dl = D.live_bytes[1] - D.live_bytes[0];
  const cards = h("div", { class: "cards" }, card("live before (" + D.moment + ")", fmtBytes(D.live_bytes[0])),
    card("live after (" + D.moment + ")", fmtBytes(D.live_bytes[1])), card("change", fmtDelta(dl)),
    card("reserved before (end)", fmtBytes(A.reserved_bytes)), card("reserved after (end)", fmtBytes(B.reserved_bytes)),
    card("sites only before / after", D.sites_only_before + " / " + D.sites_only_after));
  for (const d of D.device_deltas) {
    if (d.has_peak) cards.append(card("device " + d.device + " peak live", fmtBytes(d.peak[0]) + " \u2192 " + fmtBytes(d.peak[1])));
  }
  top.append(cards);
  const devs = new Map();
  for (const [side, F] of [["before", A], ["after", B]]) for (const d of F.devices) {
    if (!devs.has(d.device)) devs.set(d.device, {});
    devs.get(d.device)[side] = d;
  }
  for (const [dev, pair] of [...devs.entries()].sort((p, q) => p[0] - q[0])) renderDiffDevice(dev, pair);
  renderSiteDeltas();
  renderScopes();
}

function renderDiffDevice(device, pair) {
  const sec = section("Device " + device + ": before and after", "diff-timeline-" + device, null, "timeline");
  const sides = [["before", pair.before, D.before], ["after", pair.after, D.after]].filter((s) => s[1] && s[1].tiles);
  if (!sides.length) { sec.append(note("No trace events on this device in either file.")); return; }
  const both = sides.length === 2;
  const modes = [];
  if (sides.every((s) => s[1].has_time)) modes.push(["time", "relative time (since each trace's first event)"]);
  if (both && sides.every((s) => s[1].steps)) modes.push(["steps", "steps (each file's repeating step, found by periodicity)"]);
  modes.push(["share", "share of each trace"]);
  const key = "align" + device;
  let mode = getHashPart(key);
  if (!modes.some((m) => m[0] === mode)) mode = modes[0][0];
  const tools = h("div", { class: "controls" }, h("span", { class: "note", text: "Align on: " }));
  for (const [m, label] of modes) {
    const b = h("button", { type: "button", text: label, "data-align": m, "aria-pressed": String(m === mode) });
    b.addEventListener("click", () => { setHashPart(key, m); draw(m); });
    tools.append(b);
  }
  if (both && !sides.every((s) => s[1].steps)) tools.append(h("span", { class: "note", text: " (no repeating step found in " + (sides.find((s) => !s[1].steps)[0]) + ")" }));
  const holder = h("div");
  sec.append(tools, holder);
  const charts = [], details = [];
  const clickNote = () => h("span", { class: "note", text: "Click a band to keep its allocation stack here." });
  const draw = (m) => {
    for (const b of tools.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b.dataset.align === m));
    let maxMapped = -Infinity, minMapped = Infinity;
    const maps = sides.map(([, dev]) => alignment(dev, m));
    sides.forEach(([, dev], i) => {
      maxMapped = Math.max(maxMapped, maps[i].fwd(dev.x_span));
      minMapped = Math.min(minMapped, maps[i].fwd(0));
    });
    for (const map of maps) { map.limit = maxMapped; map.lo = minMapped; }
    if (charts.length) {
      // A switch: the same charts on the new axis (building them again cost most of a switch,
      // issue 36 §4), what was clicked let go as on charts built anew.
      charts.forEach((c, i) => c.setMapping(maps[i]));
      for (const d of details) d.replaceChildren(clickNote());
      charts[0].reset();
      return;
    }
    sides.forEach(([name, dev, file], i) => {
      const map = maps[i];
      const label = h("h3", { text: name + ": " + file.path.split("/").pop() + (dev.peak ? " \u2014 peak " + fmtBytes(dev.peak.bytes) + " " + fmtMoment(dev.peak.x, dev.peak.event, dev.has_time) : "") });
      const host = h("div", { class: "chart" });
      details[i] = h("div", { class: "details" }, clickNote());
      holder.append(label, ...traceNotes(dev), host, details[i]);
      const chart = new TimelineChart(host, dev, {
        tables: { frames: file.frames, stacks: file.stacks, kinds: file.frame_kinds, sites: file.band_sites, categories: D.category_names, rules: D.category_rules }, details: details[i], mapping: map, height: 250,
        sync: "diff" + device,
        onView: (c, a, b) => {
          const lo = c.map.fwd(a), hi = c.map.fwd(b);
          for (const o of charts) if (o !== c) o.setView(o.map.inv(lo), o.map.inv(hi), true);
        },
      });
      chart.device = device;
      chart.side = name;
      charts.push(chart);
      M.timelines.push(chart);
    });
    holder.append(timelineLegend(sides[0][1]));
    // Both charts start on the same axis: the longer of the two.
    charts[0].reset();
  };
  draw(mode);
}

// The sites that changed most, as a diverging bar chart (growth right, shrink left).
function renderSiteDeltas() {
  const ss = section("What changed at the " + D.moment + ", by allocation site", "diff-sites", null, "sites");
  ss.append(note(fmtCountOf(D.sites_total, "site") + " changed, " + fmtCount(D.sites_unchanged) + " unchanged; " +
    "the largest changes first. Sites are matched by their frames' text, as `memsnap diff` does."));
  const rows = D.sites;
  let top = 1;
  for (const r of rows) top = Math.max(top, Math.abs(r.after - r.before));
  const chart = h("div", { class: "deltas", role: "table" });
  chart.append(h("div", { class: "delta-row head" }, h("span", { class: "n", text: "before" }), h("span", { class: "n", text: "after" }),
    h("span", { class: "n", text: "change" }), h("span", { class: "axis", text: "\u2190 shrank \u00b7 grew \u2192" }), h("span", { text: "site" })));
  for (const r of rows) {
    const d = r.after - r.before;
    const bar = h("span", { class: "dbar " + (d > 0 ? "grow" : "shrink") });
    bar.style.width = Math.max(1, (50 * Math.abs(d)) / top) + "%";
    const axis = h("span", { class: "axis" }, bar);
    const presence = r.presence !== "both" ? h("span", { class: "note", text: " (" + r.presence.replace("_", " ") + ")" }) : null;
    const row = h("div", { class: "delta-row", "data-delta": String(d) },
      h("span", { class: "n", text: fmtBytes(r.before) }), h("span", { class: "n", text: fmtBytes(r.after) }),
      h("span", { class: "n " + (d > 0 ? "grow" : "shrink"), text: fmtDelta(d) }), axis,
      h("span", { class: "site" }, siteCell(rowFrames(r, { frames: [] }), r.synthetic, r), presence));
    row.addEventListener("mousemove", (e) => showTip(e, fmtDelta(d) + " (" + fmtCount(r.before_count) + " \u2192 " + fmtCountOf(r.after_count, "block") + ")\n" + r.key.split(";").reverse().slice(0, 6).join("\n")));
    row.addEventListener("mouseleave", hideTip);
    chart.append(row);
  }
  ss.append(chart);
  M.siteDeltas = rows.map((r) => ({ key: r.key, before: r.before, after: r.after, delta: r.after - r.before }));
}

function renderScopes() {
  const sc = section("Per device, pool and stream (end of each snapshot)", "diff-scopes", null, "scopes");
  const cls = (d) => "n " + (d > 0 ? "grow" : d < 0 ? "shrink" : "");
  const st = h("table", {}, h("tr", {}, h("th", { text: "scope" }), h("th", { class: "n", text: "reserved" }), h("th", { class: "n", text: "\u0394 reserved" }),
    h("th", { class: "n", text: "allocated" }), h("th", { class: "n", text: "\u0394 allocated" }), h("th", { class: "n", text: "segments" })));
  for (const r of D.scopes) {
    const dr = r.reserved[1] - r.reserved[0], da = r.allocated[1] - r.allocated[0];
    st.append(h("tr", {}, h("td", { text: r.scope }), h("td", { class: "n", text: fmtBytes(r.reserved[1]) }),
      h("td", { class: cls(dr), text: fmtDelta(dr) }), h("td", { class: "n", text: fmtBytes(r.allocated[1]) }),
      h("td", { class: cls(da), text: fmtDelta(da) }), h("td", { class: "n", text: r.segments[0] + " \u2192 " + r.segments[1] })));
  }
  sc.append(h("div", { class: "table-wrap" }, st));
  if (D.settings.length) {
    const se = section("Allocator settings that differ", "diff-settings", null, "settings");
    const tt = h("table", {}, h("tr", {}, h("th", { text: "setting" }), h("th", { text: "before" }), h("th", { text: "after" })));
    for (const [k, a, b] of D.settings) tt.append(h("tr", {}, h("td", { text: k }), h("td", { text: a }), h("td", { text: b })));
    se.append(tt);
  }
}
