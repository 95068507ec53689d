// The cached segment timeline (memory_viz's "Active Cached Segment Timeline"): every segment the
// allocator reserved, and every mapping of an expandable segment, as a band of its size over its
// lifetime, each on the ones reserved before it that are still there, so the top edge is the
// reserved memory. It follows that timeline's zoom; the data is the
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
      left_out: (v[i + 7] & 2) !== 0, split: (v[i + 7] & 4) !== 0 });
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
    // The segments alive after any event add up to the reserved curve (the timeline analysis
    // reconciles them), less what the trace cannot explain: only a trace that holds more at its
    // end than its final state is off, by a constant.
    const unexplained = dev.segment_lifetimes.unreconciled_bytes || 0;
    this.unexplained = unexplained;
    if (unexplained !== 0) {
      sec.append(note("The trace's segment events do not add up to its final state (" + fmtBytes(Math.abs(unexplained)) +
        (unexplained < 0 ? " more held than its final state and the reserved curve explain" : " reserved that no event explains") +
        "): the segments are drawn as the events place them, so their top edge differs from the reserved curve above by that much.", "warn"));
    }
    // "51 mapped runs", not "51 segments (51 mappings)" where every one is a mapping.
    const plain = this.segs.length - mappings;
    const counted = [plain ? fmtCountOf(plain, "segment") : "", mappings ? fmtCountOf(mappings, "mapped run") + " of expandable segments" : ""]
      .filter((t) => t).join(" and ");
    sec.append(note("Each " + (mappings ? "segment (and each mapped run of an expandable segment, in green)" : "segment") +
      " the allocator reserved from CUDA, over its lifetime, each on those reserved before it that are still there, so the top edge is " +
      "the reserved memory of the timeline above, whose zoom this chart follows. " + (counted || fmtCountOf(0, "segment")) +
      "; hover one for its address and lifetime."));
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
  // Where each segment sits: stacked on the segments reserved before it that are still there,
  // so its bottom changes only when one of those comes or goes. One sweep over the segment events
  // (releases before reservations at the same event: a segment is there after event e when
  // begin <= e < end) gives each segment its pieces [x, bottom], computed once for every zoom.
  layout() {
    const segs = this.segs, ev = [];
    segs.forEach((s, i) => {
      ev.push([s.begin, 1, i, s.begin < 0 ? 0 : s.begin_x]);
      if (s.end !== Infinity) ev.push([s.end, 0, i, s.end_x]);
    });
    ev.sort((p, q) => p[0] - q[0] || p[1] - q[1] || p[2] - q[2]);
    const alive = [];  // indices, ascending
    this.pieces = segs.map(() => ({ x: [], bottom: [] }));
    for (const [, begin, i, x] of ev) {
      let lo = 0, hi = alive.length;
      while (lo < hi) { const m = (lo + hi) >> 1; if (alive[m] < i) lo = m + 1; else hi = m; }
      if (begin) {
        let below = 0;
        for (let k = 0; k < lo; k++) below += segs[alive[k]].size;
        alive.splice(lo, 0, i);
        this.pieces[i].x.push(x);
        this.pieces[i].bottom.push(below);
        for (let k = lo + 1; k < alive.length; k++) {
          const p = this.pieces[alive[k]];
          p.x.push(x);
          p.bottom.push(p.bottom[p.bottom.length - 1] + segs[i].size);
        }
      } else {
        alive.splice(lo, 1);
        for (let k = lo; k < alive.length; k++) {
          const p = this.pieces[alive[k]];
          p.x.push(x);
          p.bottom.push(p.bottom[p.bottom.length - 1] - segs[i].size);
        }
      }
    }
    // Pieces in order of x (times that never go back) can be searched for the view.
    for (const p of this.pieces) p.sorted = p.x.every((x, q) => q === 0 || x >= p.x[q - 1]);
    // The stack's height after any event: its changes in event order.
    this.changes = ev.map(([e, begin, i]) => [e, begin ? segs[i].size : -segs[i].size]);
    let acc = 0;
    this.heightAfter = this.changes.map(([e, d]) => { acc += d; return [e, acc]; });
  }
  // Bytes stacked after event e (the start: e = -1).
  heightAt(e) {
    const h = this.heightAfter;
    let lo = 0, hi = h.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (h[m][0] <= e) lo = m + 1; else hi = m; }
    return lo ? h[lo - 1][1] : 0;
  }
  draw(a, b) {
    const t = this.timeline, u = t.u, c = t.cols, n = c.x.length, dpr = devicePixelRatio;
    this.a = a;
    this.b = b;
    if (!this.pieces) this.layout();
    const W = Math.max(320, this.host.clientWidth || u.width), H = 206;
    if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(H * dpr)) {
      this.canvas.width = Math.round(W * dpr);
      this.canvas.height = Math.round(H * dpr);
      this.canvas.style.width = W + "px";
      this.canvas.style.height = H + "px";
    }
    // Below the plot, the timeline's x axis: the same zoom, the same ticks (xAxis of the same
    // range and count), so a segment's edge reads against the time it happened.
    const left = u.bbox.left / dpr, width = u.bbox.width / dpr, top = 8, height = H - 44;
    const map = t.map, A = map.fwd(a), B = map.fwd(b);
    this.plot = { left, width, top, height, A, B };
    // The scale: the most stacked or reserved in view (at each column's sampled event).
    let ymax = 1, over = 0;
    for (let k = 0; k < n; k++) {
      if (t.colRight(k) < a || c.x[k] > b) continue;
      const stacked = this.heightAt(c.sample[k]);
      ymax = Math.max(ymax, stacked, c.res[k]);
      if (stacked > c.res[k]) over++;
    }
    this.axis = byteAxis(ymax);
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const P = (v) => left + ((v - A) / Math.max(B - A, 1e-9)) * width;  // a mapped x
    const X = (x) => P(map.fwd(Math.min(Math.max(x, a), b)));
    const Y = (v) => top + height - (v / this.axis.top) * height;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    let drawn = 0;
    this.segs.forEach((s, i) => {
      const end = s.end === Infinity ? t.span : s.end_x;
      if (end < a || (s.begin < 0 ? 0 : s.begin_x) > b) return;
      const p = this.pieces[i];
      // Its colour as a string once (hundreds of segments, drawn on every notch of the wheel).
      ctx.fillStyle = s.color || (s.color = s.mapping ? "hsl(150,45%," + (48 + (s.id % 5) * 6) + "%)" : stackColor(s.id + 7));
      ctx.beginPath();
      // From the first piece that reaches a (pieces are in order of x) to the last that starts
      // by b: a segment of a long trace has thousands, and most are out of view zoomed in.
      let q0 = 0, hi = p.sorted ? p.x.length - 1 : 0;
      while (q0 < hi) { const m = (q0 + hi) >> 1; if ((m + 1 < p.x.length ? p.x[m + 1] : end) < a) q0 = m + 1; else hi = m; }
      for (let q = q0; q < p.x.length && (p.x[q] <= b || !p.sorted); q++) {
        const x0 = p.x[q], x1 = q + 1 < p.x.length ? p.x[q + 1] : end;
        if (x1 < a || x0 > b) continue;
        const px0 = X(x0), px1 = X(x1), y0 = Y(p.bottom[q]), y1 = Y(p.bottom[q] + s.size);
        ctx.rect(px0, y1, Math.max(px1 - px0, 0.5), y0 - y1);
      }
      ctx.fill();
      drawn++;
    });
    ctx.restore();
    ctx.fillStyle = "#667085";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    for (const v of this.axis.ticks) ctx.fillText(this.axis.label(v), left - 6, Y(v) + 4);
    ctx.strokeStyle = "#d0d5dd";
    ctx.strokeRect(left + 0.5, top + 0.5, width - 1, height - 1);
    const xt = xAxis(A, B, map.kind, Math.max(3, width / 120));
    ctx.textAlign = "center";
    ctx.beginPath();
    for (const v of xt.ticks) {
      const px = Math.round(P(v)) + 0.5;
      ctx.moveTo(px, top + height);
      ctx.lineTo(px, top + height + 4);
      ctx.fillText(xt.label(v), px, top + height + 17);
    }
    ctx.stroke();
    this.fig.x_ticks = xt.ticks.map((v) => xt.label(v));
    this.fig.drawn = drawn;
    this.fig.over_reserved = over;
    this.fig.view = [a, b];
  }
  onHover(e) {
    const r = this.canvas.getBoundingClientRect(), p = this.plot;
    const px = e.clientX - r.left, py = e.clientY - r.top;
    if (!p || px < p.left || px > p.left + p.width) { hideTip(); return; }
    const x = this.timeline.map.inv(p.A + ((px - p.left) / p.width) * (p.B - p.A));
    const v = ((p.top + p.height - py) / p.height) * this.axis.top;
    for (let i = 0; i < this.segs.length; i++) {
      const s = this.segs[i], pc = this.pieces[i];
      const end = s.end === Infinity ? this.timeline.span : s.end_x;
      if (!pc.x.length || x < pc.x[0] || x >= end) continue;
      let q = 0;
      while (q + 1 < pc.x.length && pc.x[q + 1] <= x) q++;
      if (v < pc.bottom[q] || v >= pc.bottom[q] + s.size) continue;
      const ht = this.dev.has_time;
      showTip(e, (s.mapping ? "expandable segment mapping " : "segment ") + hex(s.addr) + ", " + fmtBytes(s.size) +
        ", stream " + s.stream + "\n" + (s.begin < 0 ? "reserved before the trace" : s.split ? "mapped before " + fmtX(s.begin_x, ht) +
        " (where part of its mapping was unmapped)" : (s.mapping ? "mapped at " : "reserved at ") + fmtX(s.begin_x, ht)) +
        (s.end === Infinity ? ", still reserved at the end" : ", " + (s.mapping ? "unmapped at " : "released at ") + fmtX(s.end_x, ht)));
      return;
    }
    hideTip();
  }
  figures() { return Object.assign({}, this.fig); }
}
