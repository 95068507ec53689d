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

// Every event's change to the state (states.stream, docs/report.md), decoded on first use: the
// state after any event is the stored state before it with the edits of the events between.
function decodeStream(st) {
  const z = st.stream, n = z.n, pools = st.pools;
  const hv = unpackVarints(z.headers), headers = [];
  for (let i = 0; i < hv.length; i += 5) {
    headers.push({ addr: hv[i], size: hv[i + 1], stream: hv[i + 2], pool: pools[hv[i + 3]],
      small: (hv[i + 4] & 1) !== 0, expandable: (hv[i + 4] & 2) !== 0 });
  }
  const edits = Float64Array.from(unpackVarints(z.edits)), at = new Int32Array(n + 1);
  for (let e = 0, i = 0; e < n; e++) {
    at[e] = i;
    const k = edits[i++];
    for (let j = 0; j < k; j++) {
      const op = edits[i++] % 3;
      if (op === 0) i += 2;
      if (op !== 2) i += 1 + 4 * edits[i];
    }
    at[e + 1] = i;
  }
  const wv = unpackVarints(z.what), action = new Uint8Array(n), addr = new Float64Array(n),
    size = new Float64Array(n), stack = new Int32Array(n), x = new Float64Array(n);
  for (let e = 0, a = 0, t = 0; e < n; e++) {
    action[e] = wv[5 * e];
    addr[e] = a += wv[5 * e + 1];
    size[e] = wv[5 * e + 2];
    stack[e] = wv[5 * e + 3] - 1;
    x[e] = t += wv[5 * e + 4];
  }
  const fv = unpackVarints(z.figures), k = z.figure_fields.length, figures = new Float64Array(n * k);
  for (let i = 0; i < n * k; i++) figures[i] = (i >= k ? figures[i - k] : 0) + fv[i];
  return { n, headers, edits, at, action, addr, size, stack, x, figures, fields: z.figure_fields, actions: z.actions };
}

class StateView {
  constructor(sec, dev, tables) {
    this.dev = dev;
    this.st = dev.states;
    this.tables = tables;
    this.segments = decodeSegments(this.st);
    this.moments = this.st.moments;
    this.stream = null;  // decoded on first use
    this.events = this.st.stream ? this.st.stream.n : 0;  // exact at any event when > 0
    this.file = (typeof D !== "undefined" && D.file && D.file.path) || "FILE";
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
    // Event by event: with the stream (states.stream) any event exactly; else around the labelled
    // moments the state after every event is stored (AllocatorStatesOptions::around), and elsewhere
    // a step goes to the next stored moment and says so.
    if (this.moments.length > 1 || this.events > 0) {
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
    if (this.events > 0) {
      this.slider = h("input", { type: "range", min: -1, max: this.events - 1, step: 1, value: -1,
        "aria-label": "event of the allocator state" });
      this.slider.addEventListener("input", () => this.showEvent(Number(this.slider.value), true));
      // Its position in the CLI's words: the slider's leftmost stop is "before the first event"
      // (as `memsnap frag` and `summary` name it), never "-1", which the CLI reads as the last.
      this.sliderText = h("output", { class: "slider-at" });
      bar.append(h("label", { class: "slider" }, this.slider, this.sliderText));
    } else if (this.moments.length > 1) {
      this.slider = h("input", { type: "range", min: 0, max: this.moments.length - 1, step: 1, value: 0,
        "aria-label": "moment of the allocator state" });
      this.slider.addEventListener("input", () => this.show(Number(this.slider.value), true));
      bar.append(h("label", { class: "slider" }, "moment ", this.slider));
    }
    // Go to an event by its number, as the CLI's event:N reads it: from 0, negative from the last
    // (-1: the last event).
    const last = this.moments[this.moments.length - 1].event;
    if (last >= 0) {
      this.gotoInput = h("input", { type: "number", min: -(last + 1), max: last, step: 1, class: "goto", "aria-label": "go to event", placeholder: "event" });
      const go = h("button", { type: "button", text: "go to event", "data-goto": "1" });
      const jump = () => {
        const v = Math.round(Number(this.gotoInput.value));
        if (this.gotoInput.value !== "" && isFinite(v)) this.showEvent(Math.max(0, Math.min(last, v < 0 ? last + 1 + v : v)), true);
      };
      go.addEventListener("click", jump);
      this.gotoInput.addEventListener("keydown", (e) => { if (e.key === "Enter") jump(); });
      bar.append(h("label", { class: "goto" }, this.gotoInput), go);
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
    this.events_ = h("div", { class: "events" });
    this.exactNote = this.events > 0 ? null : h("p", { class: "note exact", "data-exact": "cli" });
    this.lastEvent = this.moments[this.moments.length - 1].event;
    sec.append(...[this.title, bar, this.stepNote, this.exactNote, this.cards, legend, this.host, this.events_].filter((e) => e));
    sec.append(note("Every segment is drawn to scale, largest first, packed into rows; segments too small to see are " +
      "grouped into one box per pool, still to scale. Releasable memory is what empty_cache() would give back; " +
      "stranded memory is free but stuck inside segments in use. The states are reconstructed from the trace " +
      "backwards from the snapshot, as `memsnap frag --at event:N` does."));
    if (st.reduced) sec.append(note(st.reduced));
    for (const w of st.warnings || []) sec.append(note("Reconstruction: " + w));
    this.canvas.addEventListener("mousemove", (e) => this.onHover(e));
    this.canvas.addEventListener("mouseleave", hideTip);
    new ResizeObserver(() => { if (this.view && Math.abs(this.host.clientWidth - this.drawnWidth) >= 1) this.draw(); }).observe(this.host);
    const start = this.moments.findIndex((m) => (m.labels || []).includes("peak live"));
    this.show(start >= 0 ? start : this.moments.length - 1, false);
  }
  // The stored moment nearest to device-local event `e`.
  nearest(e) {
    let best = 0;
    this.moments.forEach((m, i) => { if (Math.abs(m.event - e) < Math.abs(this.moments[best].event - e)) best = i; });
    return best;
  }
  pick(x, e) { this.showEvent(e, true); }
  // One event before or after this one: exactly with the stream, else the stored state one event
  // away when there is one, or the next stored moment that way.
  step(d) {
    if (this.events > 0) {
      const e = this.view.event + d;
      if (e >= -1 && e < this.events) this.showEvent(e, true);
      return;
    }
    const i = this.view.index + d;
    if (i >= 0 && i < this.moments.length) this.show(i, true);
  }
  showLabel(label) {
    const i = this.moments.findIndex((m) => (m.labels || []).includes(label));
    if (i >= 0) this.show(i, true);
    return i >= 0;
  }
  get current() { return this.view ? this.view.index : -1; }
  get x() { return this.view ? this.view.x : 0; }
  // The segments of stored state i, in address order.
  momentSegments(i) { return unpackVarints(this.moments[i].segments).map((id) => this.segments[id]); }
  // The state of stored moment i.
  momentView(i) {
    const m = this.moments[i];
    return { event: m.event, x: m.x, labels: m.labels || null, figures: m.figures, segs: this.momentSegments(i), index: i,
      what: m.what || null, exact: true, asked: m.event };
  }
  // What event e did, from the stream or a stored moment.
  whatOf(e) {
    if (e < 0) return null;
    const z = this.stream;
    if (z) return { action: z.actions[z.action[e]], addr: hex(z.addr[e]), size: z.size[e], stack: z.stack[e] };
    const m = this.moments.find((q) => q.event === e);
    return m ? m.what || null : null;
  }
  // The state after device-local event e (-1: before the first): exact from the stream, starting
  // from the stored moment at or before it (or the state shown, when that is nearer); without the
  // stream, the nearest stored moment.
  stateAt(e) {
    const ms = this.moments;
    e = Math.max(-1, Math.min(this.lastEvent, Math.round(Number(e))));
    if (!isFinite(e)) e = ms[0].event;
    if (this.events === 0) {
      const v = this.momentView(this.nearest(e));
      v.asked = e;
      v.exact = v.event === e;
      return v;
    }
    if (!this.stream) this.stream = decodeStream(this.st);
    const z = this.stream;
    let lo = 0, hi = ms.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (ms[mid].event <= e) lo = mid; else hi = mid - 1; }
    const i = lo;
    if (ms[i].event === e) return this.momentView(i);
    let from = ms[i].event, segs;
    if (this.live && this.live.event <= e && this.live.event >= from) {
      from = this.live.event;
      segs = this.live.segs;
    } else {
      segs = new Map();
      for (const s of this.momentSegments(i)) segs.set(s.addr, Object.assign({}, s, { spans: s.spans.slice() }));
    }
    const E = z.edits;
    for (let ev = from + 1; ev <= e; ev++) {
      let p = z.at[ev];
      const k = E[p++];
      for (let j = 0; j < k; j++) {
        const code = E[p++], hd = z.headers[Math.floor(code / 3)], op = code % 3;
        if (op === 2) { segs.delete(hd.addr); continue; }
        let keep = 0, erase = 0;
        if (op === 0) { keep = E[p++]; erase = E[p++]; }
        const cnt = E[p++], spans = [];
        for (let c = 0; c < cnt; c++, p += 4) spans.push({ size: E[p], kind: E[p + 1], requested: E[p + 2], stack: E[p + 3] - 1 });
        if (op === 1) segs.set(hd.addr, Object.assign({}, hd, { spans }));
        else segs.get(hd.addr).spans.splice(keep, erase, ...spans);
      }
    }
    this.live = { event: e, segs };
    const f = {}, base = e * z.fields.length;
    z.fields.forEach((name, k) => { f[name] = z.figures[base + k]; });
    return { event: e, x: z.x[e], labels: null, figures: f, segs: [...segs.values()].sort((p, q) => p.addr - q.addr),
      index: -1, what: this.whatOf(e), exact: true, asked: e };
  }
  show(i, fromUser) { this.render(this.momentView(i), fromUser); }
  showEvent(e, fromUser) { this.render(this.stateAt(e), fromUser); }
  render(v, fromUser) {
    this.view = v;
    const f = v.figures, ht = this.dev.has_time;
    if (this.slider) this.slider.value = this.events > 0 ? v.event : v.index;
    if (this.gotoInput && document.activeElement !== this.gotoInput) this.gotoInput.value = v.event < 0 ? "" : v.event;
    if (this.sliderText) this.sliderText.textContent = v.event < 0 ? "before the first event" : "event " + fmtCount(v.event);
    // Without times x is the event index: "after event 5,136", not "after event 5,136 (event 5,136)".
    const when = v.event < 0 ? "before the first event" : "after event " + fmtCount(v.event) + (ht ? " (" + fmtX(v.x, ht) + ")" : "");
    this.title.textContent = "State " + when + (v.labels ? " \u2014 " + v.labels.join(", ") : "");
    const share = (x) => (f.reserved_bytes > 0 ? " (" + fmtPct(x / f.reserved_bytes) + ")" : "");
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
    if (this.prevButton && this.events > 0) {
      this.prevButton.disabled = v.event <= -1;
      this.nextButton.disabled = v.event >= this.events - 1;
      this.stepNote.textContent = "";
    } else if (this.prevButton) {
      const i = v.index, prev = this.moments[i - 1], next = this.moments[i + 1];
      const gap = (o) => (o ? Math.abs(o.event - v.event) : 0);
      this.prevButton.disabled = !prev;
      this.nextButton.disabled = !next;
      this.prevButton.textContent = gap(prev) > 1 ? "\u25c0 previous stored moment" : "\u25c0 previous event";
      this.nextButton.textContent = gap(next) > 1 ? "next stored moment \u25b6" : "next event \u25b6";
      this.stepNote.textContent = gap(prev) > 1 || gap(next) > 1 ?
        "The state is stored after every event around the peaks, the OOM and the end, and at " + fmtCount(this.st.samples) +
        " evenly spaced moments elsewhere: " + (gap(prev) > 1 ? "the previous one is " + fmtCountOf(gap(prev), "event") + " earlier" : "") +
        (gap(prev) > 1 && gap(next) > 1 ? ", " : "") + (gap(next) > 1 ? "the next one " + fmtCountOf(gap(next), "event") + " later" : "") + "." : "";
    }
    // A trace too long for the page to carry every event: the exact state of the event asked for
    // is one command away.
    if (this.events === 0 && this.exactNote) {
      const n = this.lastEvent + 1, asked = Math.max(0, v.asked);
      this.exactNote.replaceChildren(
        (v.exact ? "" : "Event " + fmtCount(v.asked) + " is not stored: this is the nearest stored state, " +
          fmtCountOf(Math.abs(v.event - v.asked), "event") + (v.event > v.asked ? " later" : " earlier") + ". ") +
        "This trace's " + fmtCountOf(n, "event") + " are too many for the page to carry each one's change; " +
        "it stores the state after every event around the peaks, the OOM and the end. The state after any event exactly: ",
        h("code", { text: "memsnap blocks " + shellWord(this.file) + " --at event:" + asked }),
        " (and its figures: ", h("code", { text: "memsnap frag " + shellWord(this.file) + " --at event:" + asked }), ").");
    }
    this.renderEvents();
    if (this.timeline) this.timeline.setCursor(v.x);
    if (fromUser) setHashPart("s" + this.dev.device, String(v.event));
  }
  // One line of the list of events: what event e did.
  eventHead(e, x, w, labels) {
    const ht = this.dev.has_time;
    return (e < 0 ? "before the first event" : "event " + fmtCount(e) + (ht ? " (" + fmtX(x, ht) + ")" : "")) +
      (w ? ": " + w.action.replace("_", " ") + " " + fmtBytes(w.size) + " at " + w.addr : "") + (labels ? " \u2014 " + labels.join(", ") : "");
  }
  eventRow(e, x, w, labels, current, go) {
    const parts = w ? stackParts(this.tables, w.stack) : null;
    const row = h("div", { class: "event" + (current ? " current" : ""), "data-event": String(e) });
    const b = h("button", { type: "button", class: "link", text: this.eventHead(e, x, w, labels) });
    b.addEventListener("click", go);
    row.append(b);
    if (parts && !current) {
      const first = parts.user[0] || parts.library[0] || parts.native[0] || parts.all[0];
      if (first) row.append(h("span", { class: "note", text: " " + frameShort(first) }));
    } else if (parts) {
      const user = h("pre", { class: "user", text: stackSummary(parts) });
      const raw = h("details", {}, h("summary", { text: "raw stack (" + fmtCountOf(parts.all.length, "frame") + ", innermost first)" }),
        h("pre", { text: stackText(parts.all) }));
      row.append(user, raw);
    }
    return row;
  }
  // The events around the cursor, each with what it did and where in the user's code (the whole
  // stack one click further): every event with the stream, else the stored states only, with the
  // events between them counted.
  renderEvents() {
    const rows = [], v = this.view;
    if (this.events > 0) {
      if (!this.stream) this.stream = decodeStream(this.st);
      const lo = Math.max(-1, v.event - 6), hi = Math.min(this.events - 1, v.event + 6);
      for (let e = lo; e <= hi; e++) {
        const m = this.moments.find((q) => q.event === e);
        rows.push(this.eventRow(e, e < 0 ? 0 : this.stream.x[e], this.whatOf(e), m ? m.labels : null, e === v.event, () => this.showEvent(e, true)));
      }
    } else {
      const c = v.index, lo = Math.max(0, c - 6), hi = Math.min(this.moments.length - 1, c + 6);
      for (let k = lo; k <= hi; k++) {
        const m = this.moments[k];
        if (k > lo && m.event - this.moments[k - 1].event > 1) {
          rows.push(h("div", { class: "note gap", text: "\u2026 " + fmtCountOf(m.event - this.moments[k - 1].event - 1, "event") + " not stored \u2026" }));
        }
        rows.push(this.eventRow(m.event, m.x, m.what, m.labels, k === c, () => this.show(k, true)));
      }
    }
    this.events_.replaceChildren(h("h4", { text: "Events around the cursor" }), ...rows);
  }
  draw() {
    const v = this.view;
    const segs = v.segs.slice();
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
    // Rows end evenly, as justified text does: what a row (but the last) has left over, less
    // than any box below it, goes into the spaces between its boxes, which keep their size.
    const inRow = used.map(() => []);
    for (const b of boxes) inRow[b.row].push(b);
    for (let r = 0; r + 1 < used.length; r++) {
      const row = inRow[r], spare = W - used[r];
      if (row.length < 2 || spare <= 0) continue;
      row.forEach((b, k) => { b.x += (spare * k) / (row.length - 1); });
      used[r] = W;
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
    this.fig = { device: this.dev.device, event: v.event, index: v.index, labels: v.labels || [], figures: v.figures, drawn,
      bytes_per_px: bpp, rows, width: W, height: H, outside, row_ends: used.map((u, r) => Math.max(...inRow[r].map((b) => b.x + b.w))), row_boxes: inRow.map((r) => r.length),
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
