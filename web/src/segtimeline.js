// The cached segment timeline (memory_viz's "Active Cached Segment Timeline"): every segment the
// allocator reserved, and every mapping of an expandable segment, as a band of its size over its
// lifetime, stacked in the order they were reserved at each column of the memory timeline above,
// so the top edge is the reserved memory. It follows that timeline's zoom; the data is the
// timeline analysis's segment lifetimes (`memsnap timeline` sums them into its reserved curve).

// Segment lifetimes, 8 numbers each (report::internal::SegmentLifetimesJson, docs/report.md).
function decodeSegmentLifetimes(packed) {
  const v = unpackVarints(packed.data), out = [];
  let begin = -1, bx = 0;
  for (let i = 0; i + 7 < v.length; i += 8) {
    begin += v[i];
    bx += v[i + 2];
    out.push({ id: out.length, begin, end: v[i + 1] < 0 ? Infinity : begin + v[i + 1], begin_x: bx,
      end_x: bx + v[i + 3], size: v[i + 4], addr: v[i + 5], stream: v[i + 6], mapping: (v[i + 7] & 1) !== 0,
      left_out: (v[i + 7] & 2) !== 0 });
  }
  return out;
}

class SegmentTimeline {
  constructor(sec, dev, timeline) {
    this.dev = dev;
    this.timeline = timeline;
    this.segs = decodeSegmentLifetimes(dev.segment_lifetimes).filter((s) => !s.left_out);
    const mappings = this.segs.filter((s) => s.mapping).length;
    // A trace whose segment events do not add up to its final state: the reserved curve is
    // anchored at the final state (docs/figures.md), the segments are drawn where the events put
    // them, so the two differ by what the trace cannot explain; say so rather than hide it.
    const unexplained = dev.segment_lifetimes.unreconciled_bytes || 0;
    this.unexplained = unexplained;
    if (unexplained !== 0) {
      sec.append(note("The trace's segment events do not add up to its final state (" + fmtBytes(Math.abs(unexplained)) +
        (unexplained < 0 ? " more released than the reserved memory before the trace can hold" : " reserved that no event explains") +
        "): the segments are drawn as the events place them, so their top edge differs from the reserved curve above by up to that much.", "warn"));
    }
    sec.append(note("Each " + (mappings ? "segment (and each mapped run of an expandable segment, in green)" : "segment") +
      " the allocator reserved from CUDA, over its lifetime: stacked in the order they were reserved, so the top edge is " +
      "the reserved memory of the timeline above, whose zoom this chart follows. " + fmtCountOf(this.segs.length, "segment") +
      (mappings ? " (" + fmtCountOf(mappings, "mapping") + ")" : "") + "; hover one for its address and lifetime."));
    this.host = h("div", { class: "chart segtl" });
    sec.append(this.host);
    this.canvas = h("canvas");
    this.host.append(this.canvas);
    this.fig = { device: dev.device, segments: this.segs.length, drawn: 0, over_reserved: 0 };
    this.canvas.addEventListener("mousemove", (e) => this.onHover(e));
    this.canvas.addEventListener("mouseleave", hideTip);
    timeline.followers.push((a, b) => this.draw(a, b));
    new ResizeObserver(() => this.draw(this.timeline.a, this.timeline.b)).observe(this.host);
    this.draw(timeline.a, timeline.b);
  }
  // Bottoms of the segments live at each of the timeline's columns (at the column's sampled event).
  stack() {
    const c = this.timeline.cols, n = c.x.length, acc = new Float64Array(n);
    this.rows = [];
    for (const s of this.segs) {
      let lo = 0, hi = n;
      while (lo < hi) { const m = (lo + hi) >> 1; if (c.sample[m] < s.begin) lo = m + 1; else hi = m; }
      const c0 = lo;
      hi = n;
      while (lo < hi) { const m = (lo + hi) >> 1; if (c.sample[m] < s.end) lo = m + 1; else hi = m; }
      const c1 = lo - 1;
      if (c1 < c0) continue;
      const bottom = new Float64Array(c1 - c0 + 1);
      for (let k = c0; k <= c1; k++) { bottom[k - c0] = acc[k]; acc[k] += s.size; }
      this.rows.push({ seg: s, c0, c1, bottom });
    }
    this.top = acc;
  }
  draw(a, b) {
    const t = this.timeline, u = t.u, c = t.cols, n = c.x.length, dpr = devicePixelRatio;
    this.a = a;
    this.b = b;
    this.stack();
    const W = Math.max(320, this.host.clientWidth || u.width), H = 180;
    this.canvas.width = W * dpr;
    this.canvas.height = H * dpr;
    this.canvas.style.width = W + "px";
    this.canvas.style.height = H + "px";
    const left = u.bbox.left / dpr, width = u.bbox.width / dpr, top = 8, height = H - 24;
    this.plot = { left, width, top, height };
    let ymax = 1, over = 0;
    for (let k = 0; k < n; k++) {
      if (t.colRight(k) < a || c.x[k] > b) continue;
      ymax = Math.max(ymax, this.top[k], c.res[k]);
      if (this.top[k] > c.res[k]) over++;
    }
    this.axis = byteAxis(ymax);
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const X = (x) => left + ((Math.min(Math.max(x, a), b) - a) / Math.max(b - a, 1e-9)) * width;
    const Y = (v) => top + height - (v / this.axis.top) * height;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    let drawn = 0;
    for (const r of this.rows) {
      const k0 = r.c0, k1 = r.c1;
      if (t.colRight(k1) < a || c.x[k0] > b) continue;
      ctx.fillStyle = r.seg.mapping ? "hsl(150,45%," + (48 + (r.seg.id % 5) * 6) + "%)" : stackColor(r.seg.id + 7);
      ctx.beginPath();
      // One rectangle per run of columns where the segments below it do not change.
      for (let k = k0; k <= k1;) {
        const bot = r.bottom[k - k0];
        let q = k + 1;
        while (q <= k1 && r.bottom[q - k0] === bot) q++;
        const x0 = X(c.x[k]), x1 = X(t.colRight(q - 1)), y0 = Y(bot), y1 = Y(bot + r.seg.size);
        if (x1 > x0) ctx.rect(x0, y1, x1 - x0, y0 - y1);
        k = q;
      }
      ctx.fill();
      drawn++;
    }
    ctx.restore();
    ctx.fillStyle = "#667085";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    for (const v of this.axis.ticks) ctx.fillText(this.axis.label(v), left - 6, Y(v) + 4);
    ctx.strokeStyle = "#d0d5dd";
    ctx.strokeRect(left + 0.5, top + 0.5, width - 1, height - 1);
    this.fig.drawn = drawn;
    this.fig.over_reserved = over;
    this.fig.view = [a, b];
  }
  onHover(e) {
    const r = this.canvas.getBoundingClientRect(), p = this.plot;
    const px = e.clientX - r.left, py = e.clientY - r.top;
    if (!p || px < p.left || px > p.left + p.width) { hideTip(); return; }
    const x = this.a + ((px - p.left) / p.width) * (this.b - this.a);
    const v = ((p.top + p.height - py) / p.height) * this.axis.top;
    const col = this.timeline.columnAt(x).index;
    for (const row of this.rows) {
      if (col < row.c0 || col > row.c1) continue;
      const bot = row.bottom[col - row.c0];
      if (v < bot || v >= bot + row.seg.size) continue;
      const s = row.seg, ht = this.dev.has_time;
      showTip(e, (s.mapping ? "expandable segment mapping " : "segment ") + hex(s.addr) + ", " + fmtBytes(s.size) +
        ", stream " + s.stream + "\n" + (s.begin < 0 ? "reserved before the trace" : (s.mapping ? "mapped " : "reserved ") + fmtX(s.begin_x, ht)) +
        (s.end === Infinity ? ", still reserved at the end" : ", " + (s.mapping ? "unmapped " : "released ") + fmtX(s.end_x, ht)));
      return;
    }
    hideTip();
  }
  figures() { return Object.assign({}, this.fig); }
}
