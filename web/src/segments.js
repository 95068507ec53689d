// The allocator's state at a moment (analysis/alloc_states.h): every segment drawn to scale in
// packed rows, blocks coloured by state, free memory split into releasable and stranded. A cursor
// (slider, the timeline's click, and the peak and OOM shortcuts) picks the moment.
const SPAN_KINDS = [
  { key: "allocated", color: COLORS.allocated, text: "allocated" },
  { key: "pending", color: COLORS.pending, text: "pending free" },
  { key: "stranded", color: COLORS.stranded, text: "free, stranded" },
  { key: "releasable", color: COLORS.releasable, text: "free, releasable" },
];

function decodeSegments(states) {
  const v = unpackVarints(states.segments.data), out = [];
  let i = 0;
  while (i < v.length) {
    const s = { addr: v[i], size: v[i + 1], stream: v[i + 2], pool: states.pools[v[i + 3]],
      small: (v[i + 4] & 1) !== 0, expandable: (v[i + 4] & 2) !== 0, spans: [] };
    const n = v[i + 5];
    i += 6;
    for (let k = 0; k < n; k++, i += 4) s.spans.push({ size: v[i], kind: v[i + 1], requested: v[i + 2], stack: v[i + 3] - 1 });
    out.push(s);
  }
  return out;
}

class StateView {
  constructor(sec, dev, tables) {
    this.dev = dev;
    this.st = dev.states;
    this.tables = tables;
    this.segments = decodeSegments(this.st);
    this.moments = this.st.moments;
    this.timeline = null;
    this.fig = { device: dev.device };
    this.build(sec);
  }
  build(sec) {
    const st = this.st, ht = this.dev.has_time;
    this.title = h("h3", { class: "moment" });
    const bar = h("div", { class: "controls" });
    const shortcuts = [];
    this.moments.forEach((m, i) => {
      for (const label of m.labels || []) shortcuts.push([label, i]);
    });
    const order = ["peak live", "peak reserved", "peak allocated", "OOM", "end"];
    shortcuts.sort((p, q) => order.indexOf(p[0]) - order.indexOf(q[0]) || p[1] - q[1]);
    for (const [label, i] of shortcuts) {
      const b = h("button", { type: "button", text: label, "data-moment": label });
      b.addEventListener("click", () => this.show(i, true));
      bar.append(b);
    }
    // Event by event: around the labelled moments the state after every event is stored
    // (AllocatorStatesOptions::around); elsewhere a step goes to the next stored moment and says so.
    if (this.moments.length > 1) {
      this.prevButton = h("button", { type: "button", text: "\u25c0 previous event", "data-step": "-1", title: "or the left arrow key" });
      this.nextButton = h("button", { type: "button", text: "next event \u25b6", "data-step": "1", title: "or the right arrow key" });
      this.prevButton.addEventListener("click", () => this.step(-1));
      this.nextButton.addEventListener("click", () => this.step(1));
      bar.append(this.prevButton, this.nextButton);
      sec.setAttribute("tabindex", "0");
      sec.addEventListener("keydown", (e) => {
        if (e.target !== sec && e.target.tagName === "INPUT") return;
        if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
          this.step(e.key === "ArrowLeft" ? -1 : 1);
          e.preventDefault();
          e.stopPropagation();
        }
      });
    }
    if (this.moments.length > 1) {
      this.slider = h("input", { type: "range", min: 0, max: this.moments.length - 1, step: 1, value: 0,
        "aria-label": "moment of the allocator state" });
      this.slider.addEventListener("input", () => this.show(Number(this.slider.value), true));
      bar.append(h("label", { class: "slider" }, "moment ", this.slider));
    }
    this.cards = h("div", { class: "cards" });
    this.host = h("div", { class: "segmap" });
    this.canvas = h("canvas");
    this.host.append(this.canvas);
    const legend = h("div", { class: "legend" },
      swatch(COLORS.allocated, "allocated", "blocks handed out to tensors"),
      swatch(COLORS.pending, "pending free", "freed by the program, waiting for work on other streams (record_stream) before reuse"),
      swatch(COLORS.releasable, "free, releasable", "whole free segments (or whole free pages of expandable segments): torch.cuda.empty_cache() returns them to CUDA"),
      swatch(COLORS.stranded, "free, stranded", "free blocks inside segments that still hold allocations: empty_cache() cannot release them; only requests that fit them can reuse them"));
    this.stepNote = h("p", { class: "note step" });
    this.events = h("div", { class: "events" });
    sec.append(this.title, bar, this.stepNote, this.cards, legend, this.host, this.events);
    sec.append(note("Every segment is drawn to scale, largest first, packed into rows; segments too small to see are " +
      "grouped into one box per pool, still to scale. Releasable memory is what empty_cache() would give back; " +
      "stranded memory is free but stuck inside segments in use. The states are reconstructed from the trace " +
      "backwards from the snapshot, as `memsnap frag --at event:N` does."));
    if (st.reduced) sec.append(note(st.reduced));
    for (const w of st.warnings || []) sec.append(note("Reconstruction: " + w));
    this.canvas.addEventListener("mousemove", (e) => this.onHover(e));
    this.canvas.addEventListener("mouseleave", hideTip);
    new ResizeObserver(() => { if (this.current != null && Math.abs(this.host.clientWidth - this.drawnWidth) >= 1) this.draw(); }).observe(this.host);
    const start = this.moments.findIndex((m) => (m.labels || []).includes("peak live"));
    this.show(start >= 0 ? start : this.moments.length - 1, false);
  }
  // The stored moment nearest to device-local event `e`.
  nearest(e) {
    let best = 0;
    this.moments.forEach((m, i) => { if (Math.abs(m.event - e) < Math.abs(this.moments[best].event - e)) best = i; });
    return best;
  }
  pick(x, e) { this.show(this.nearest(e), true); }
  // The stored state one event before or after this one when there is one, else the next stored
  // moment that way.
  step(d) {
    const i = this.current + d;
    if (i < 0 || i >= this.moments.length) return;
    this.show(i, true);
  }
  showLabel(label) {
    const i = this.moments.findIndex((m) => (m.labels || []).includes(label));
    if (i >= 0) this.show(i, true);
    return i >= 0;
  }
  show(i, fromUser) {
    this.current = i;
    const m = this.moments[i], f = m.figures, ht = this.dev.has_time;
    if (this.slider) this.slider.value = i;
    // Without times x is the event index: "after event 5,136", not "after event 5,136 (event 5,136)".
    const when = m.event < 0 ? "before the first event" : "after event " + fmtCount(m.event) + (ht ? " (" + fmtX(m.x, ht) + ")" : "");
    this.title.textContent = "State " + when + (m.labels ? " \u2014 " + m.labels.join(", ") : "");
    const share = (v) => (f.reserved_bytes > 0 ? " (" + fmtPct(v / f.reserved_bytes) + ")" : "");
    this.cards.replaceChildren(
      card("reserved", fmtBytes(f.reserved_bytes), fmtCountOf(f.segments, "segment") + ", " + fmtCountOf(f.blocks, "block")),
      card("allocated", fmtBytes(f.allocated_bytes) + share(f.allocated_bytes)),
      card("free, releasable", fmtBytes(f.releasable_bytes), "whole free segments: empty_cache() would release them"),
      card("free, stranded", fmtBytes(f.stranded_bytes), "free blocks inside segments in use"),
      card("pending free", fmtBytes(f.pending_free_bytes)),
      card("largest free block", fmtBytes(f.largest_free_bytes)),
      card("segments", fmtCount(f.segments) + " (" + fmtCount(f.free_segments) + " free)"),
      // One meaning of fragmentation on the page, frag's: the share of reserved memory stranded.
      card("fragmentation", fmtPct(f.reserved_bytes > 0 ? f.stranded_bytes / f.reserved_bytes : 0),
        "free memory stranded inside segments in use, as a share of reserved memory (memsnap frag's stranded share)"));
    this.draw();
    const prev = this.moments[i - 1], next = this.moments[i + 1];
    const gap = (o) => (o ? Math.abs(o.event - m.event) : 0);
    if (this.prevButton) {
      this.prevButton.disabled = !prev;
      this.nextButton.disabled = !next;
      this.prevButton.textContent = gap(prev) > 1 ? "\u25c0 previous stored moment" : "\u25c0 previous event";
      this.nextButton.textContent = gap(next) > 1 ? "next stored moment \u25b6" : "next event \u25b6";
      this.stepNote.textContent = gap(prev) > 1 || gap(next) > 1 ?
        "The state is stored after every event around the peaks, the OOM and the end, and at " + fmtCount(this.st.samples) +
        " evenly spaced moments elsewhere: " + (gap(prev) > 1 ? "the previous one is " + fmtCountOf(gap(prev), "event") + " earlier" : "") +
        (gap(prev) > 1 && gap(next) > 1 ? ", " : "") + (gap(next) > 1 ? "the next one " + fmtCountOf(gap(next), "event") + " later" : "") + "." : "";
    }
    this.renderEvents();
    if (this.timeline) this.timeline.setCursor(m.x);
    if (fromUser) setHashPart("s" + this.dev.device, String(m.event));
  }
  // The events around the cursor, each with what it did and where in the user's code (the whole
  // stack one click further); the stored states only, with the events between them counted.
  renderEvents() {
    const rows = [], ht = this.dev.has_time, lo = Math.max(0, this.current - 6), hi = Math.min(this.moments.length - 1, this.current + 6);
    for (let k = lo; k <= hi; k++) {
      const m = this.moments[k];
      if (k > lo && m.event - this.moments[k - 1].event > 1) {
        rows.push(h("div", { class: "note gap", text: "\u2026 " + fmtCountOf(m.event - this.moments[k - 1].event - 1, "event") + " not stored \u2026" }));
      }
      const w = m.what;
      const head = (m.event < 0 ? "before the first event" : "event " + fmtCount(m.event) + (ht ? " (" + fmtX(m.x, ht) + ")" : "")) +
        (w ? ": " + w.action.replace("_", " ") + " " + fmtBytes(w.size) + " at " + w.addr : "") + (m.labels ? " \u2014 " + m.labels.join(", ") : "");
      const parts = w ? stackParts(this.tables, w.stack) : null;
      const row = h("div", { class: "event" + (k === this.current ? " current" : ""), "data-event": String(m.event) });
      const go = h("button", { type: "button", class: "link", text: head });
      go.addEventListener("click", () => this.show(k, true));
      row.append(go);
      if (parts && k !== this.current) {
        const first = parts.user[0] || parts.library[0] || parts.native[0] || parts.all[0];
        if (first) row.append(h("span", { class: "note", text: " " + frameShort(first) }));
      } else if (parts) {
        const user = h("pre", { class: "user", text: stackSummary(parts) });
        const raw = h("details", {}, h("summary", { text: "raw stack (" + fmtCountOf(parts.all.length, "frame") + ", innermost first)" }),
          h("pre", { text: stackText(parts.all) }));
        row.append(user, raw);
      }
      rows.push(row);
    }
    this.events.replaceChildren(h("h4", { text: "Events around the cursor" }), ...rows);
  }
  // The segments of stored state i, in address order.
  momentSegments(i) { return unpackVarints(this.moments[i].segments).map((id) => this.segments[id]); }
  draw() {
    const m = this.moments[this.current];
    const segs = this.momentSegments(this.current);
    segs.sort((p, q) => (p.small - q.small) || (q.size - p.size) || (p.addr - q.addr));
    const W = Math.max(200, this.host.clientWidth || 800);
    this.drawnWidth = this.host.clientWidth;
    const rowH = 18, gap = 4, maxRows = 28;
    let total = 0, largest = 1;
    for (const s of segs) { total += s.size; largest = Math.max(largest, s.size); }
    const bpp = Math.max(total / (W * maxRows * 0.85), largest / W, 1);
    // Boxes: a segment, or a group of consecutive segments under 3 px (one pool type each).
    const boxes = [];
    let group = null;
    for (const s of segs) {
      if (s.size / bpp >= 3) { group = null; boxes.push({ segs: [s], size: s.size }); continue; }
      if (!group || group.small !== s.small || group.size / bpp >= W - 8) {
        group = { segs: [], size: 0, small: s.small };
        boxes.push(group);
      }
      group.segs.push(s);
      group.size += s.size;
    }
    // Pack the boxes into rows, largest first, each into the first row with room for it (first
    // fit): a row ends short only by less than any box drawn below it, so rows do not end ragged
    // where a later, smaller segment would have filled them.
    const used = [];
    for (const b of boxes) {
      const w = b.size / bpp;
      let row = used.findIndex((u) => u + w <= W + 0.01);
      if (row < 0) { row = used.length; used.push(0); }
      b.x = used[row]; b.row = row; b.w = w;
      used[row] += w;
    }
    const rows = used.length;
    const H = Math.max(rowH, rows * (rowH + gap));
    const dpr = devicePixelRatio;
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.canvas.style.width = W + "px";
    this.canvas.style.height = H + "px";
    const ctx = this.canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    const drawn = { segments: 0, reserved: 0, allocated: 0, pending: 0, stranded: 0, releasable: 0, largest_free: 0, groups: 0 };
    let outside = 0;
    for (const b of boxes) {
      const y = b.row * (rowH + gap);
      const inner = Math.max(b.w - (b.segs.length === 1 && b.w > 4 ? 1 : 0), 0.5);
      if (b.x < -0.01 || b.x + b.w > W + 0.01 || y + rowH > H + 0.01) outside++;
      if (b.segs.length > 1) drawn.groups++;
      // Spans to scale; a group shows the kinds of its segments side by side.
      const parts = [];
      if (b.segs.length === 1) {
        for (const p of b.segs[0].spans) parts.push([p.kind, p.size]);
      } else {
        const by = [0, 0, 0, 0];
        for (const s of b.segs) for (const p of s.spans) by[p.kind] += p.size;
        by.forEach((v, k) => { if (v > 0) parts.push([k, v]); });
      }
      let off = 0;
      for (const [kind, size] of parts) {
        const x0 = b.x + (off / b.size) * inner, w = (size / b.size) * inner;
        ctx.fillStyle = SPAN_KINDS[kind].color;
        ctx.fillRect(x0, y, Math.max(w, 0), rowH);
        off += size;
      }
      for (const s of b.segs) {
        drawn.segments++;
        drawn.reserved += s.size;
        for (const p of s.spans) {
          drawn[SPAN_KINDS[p.kind].key] += p.size;
          if (p.kind >= 2) drawn.largest_free = Math.max(drawn.largest_free, p.size);
        }
      }
    }
    this.boxes = boxes;
    this.layout = { bpp, rowH, gap };
    this.fig = { device: this.dev.device, event: m.event, index: this.current, labels: m.labels || [], figures: m.figures, drawn,
      bytes_per_px: bpp, rows, width: W, height: H, outside, row_ends: used.slice(),
      // The narrowest box of each row: a row's gap must be narrower than every box below it.
      row_min_box: used.map((u, r) => Math.min(...boxes.filter((q) => q.row === r).map((q) => q.w))) };
  }
  onHover(e) {
    const r = this.canvas.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    const { bpp, rowH, gap } = this.layout;
    const row = Math.floor(my / (rowH + gap));
    if (my - row * (rowH + gap) > rowH) { hideTip(); return; }
    const b = this.boxes.find((q) => q.row === row && mx >= q.x && mx < q.x + q.w);
    if (!b) { hideTip(); return; }
    if (b.segs.length > 1) {
      const by = [0, 0, 0, 0];
      for (const s of b.segs) for (const p of s.spans) by[p.kind] += p.size;
      showTip(e, fmtCountOf(b.segs.length, "small segment") + ", " + fmtBytes(b.size) + " (" + (b.small ? "small" : "large") + " pool)\n" +
        SPAN_KINDS.map((k, i) => k.text + " " + fmtBytes(by[i])).join("\n"));
      return;
    }
    const s = b.segs[0];
    const at = (mx - b.x) * bpp;
    let off = 0, span = s.spans[s.spans.length - 1], start = 0;
    for (const p of s.spans) { if (at < off + p.size) { span = p; start = off; break; } off += p.size; }
    let text = SPAN_KINDS[span.kind].text + " block " + fmtBytes(span.size) + " at +" + fmtBytes(start);
    if (span.kind <= 1) text += " (" + fmtBytes(span.requested) + " requested)";
    if (span.kind === 2) text += "\nstranded: the segment holds allocations, so empty_cache() cannot release it";
    if (span.kind === 3) text += "\nreleasable: empty_cache() would return it to CUDA";
    text += "\nsegment " + hex(s.addr) + ", " + fmtBytes(s.size) + ", " + s.pool + " pool (" + (s.small ? "small" : "large") +
      (s.expandable ? ", expandable" : "") + "), stream " + s.stream;
    if (span.kind <= 1) text += "\n\n" + stackSummary(stackParts(this.tables, span.stack));
    showTip(e, text);
  }
}
