// The zoomable memory timeline of one device: live and reserved curves and the largest lifetimes as
// stacked bands, redrawn from the level-of-detail data (analysis/timeline_lod.h) at every zoom.
// uPlot draws the axes, the curves, the drag-to-zoom selection and the cursor; the bands are
// painted in its drawAxes hook, under the curves, clipped to the plot.

// The decoded level-of-detail data of one device (tiles decoded on first use).
class Lod {
  constructor(dev) {
    this.dev = dev;
    this.C = dev.columns;
    this.span = dev.x_span;
    this.levels = dev.levels;
    this.tiles = new Map();
    for (const t of dev.tiles) {
      this.tiles.set(t[0] + ":" + t[1], { level: t[0], tile: t[1], curve: t[3], bandIds: t[4], d: null });
    }
    this.bands = Lod.decodeBands(dev.bands);
    // Decoded once per device (dev.lodCache): the packed text is not needed again, and it is a
    // few MB of the page's heap on a large trace.
    dev.bands.data = null;
    // What the program said about a band's allocation (user_metadata, compile_context).
    for (const [id, meta, compile] of dev.band_extras || []) {
      const b = this.bands[id];
      if (b) { b.metadata = meta; b.compile = compile; }
    }
  }
  static decodeBands(packed) {
    const v = unpackVarints(packed.data), out = [];
    // Each field a small integer where it is one: V8 keeps those in the object itself, and a
    // number that is not one in a box of its own per field (tens of thousands of bands: 10 MB of
    // the page's heap, issue 36 §4).
    const small = (x) => (x >= -0x40000000 && x < 0x40000000 && x === Math.floor(x) ? x | 0 : x);
    let alloc = -1, ax = 0;
    for (let i = 0; i + 13 < v.length; i += 14) {
      alloc += v[i];
      ax += v[i + 2];
      out.push({
        id: out.length, alloc: small(alloc), free: v[i + 1] < 0 ? Infinity : alloc + v[i + 1],
        alloc_x: small(ax), free_x: small(ax + v[i + 3]), size: small(v[i + 4]), rounded: small(v[i + 4] + v[i + 5]),
        addr: v[i + 6], stream: small(v[i + 7]), cls: small(v[i + 8]), stack: small(v[i + 9] - 1), version: small(v[i + 10]),
        site: small(v[i + 11]), cat: small(v[i + 12]), rule: small(v[i + 13]),
      });
    }
    return out;
  }
  buckets(level) { return this.C * Math.pow(4, level); }
  width(level) { return this.span / this.buckets(level); }
  tileOf(x, level) {
    const b = Math.floor((x / this.span) * this.buckets(level));
    return Math.floor(Math.min(Math.max(b, 0), this.buckets(level) - 1) / this.C);
  }
  tile(level, t) {
    const e = this.tiles.get(level + ":" + t);
    if (!e) return null;
    if (!e.d) {
      const v = unpackVarints(e.curve), n = v.length / 8;
      const d = { idx: new Float64Array(n), sample: new Float64Array(n), last: new Float64Array(n),
        max: new Float64Array(n), min: new Float64Array(n), liveLast: new Float64Array(n),
        resMax: new Float64Array(n), resLast: new Float64Array(n), bandIds: [] };
      let idx = t * this.C, last = -1, live = 0, res = 0;
      for (let k = 0; k < n; k++) {
        const o = 8 * k;
        idx += v[o];
        d.idx[k] = idx;
        d.sample[k] = last + v[o + 1];
        d.last[k] = d.sample[k] + v[o + 2];
        d.max[k] = live + v[o + 3];
        d.min[k] = d.max[k] - v[o + 4];
        d.liveLast[k] = d.max[k] - v[o + 5];
        d.resMax[k] = res + v[o + 6];
        d.resLast[k] = d.resMax[k] - v[o + 7];
        last = d.last[k];
        live = d.max[k];
        res = d.resMax[k];
      }
      let id = 0;
      for (const dv of unpackVarints(e.bandIds)) { id += dv; d.bandIds.push(id); }
      e.d = d;
    }
    return e.d;
  }
  // The columns that draw [a, b] at `px` pixels: the coarsest level whose buckets are at most a
  // pixel wide, or the finest stored for the whole range.
  view(a, b, px) { return this.columnsAt(this.levelFor(a, b, px), a, b); }
  // The coarsest level whose columns are at most a pixel wide over [a, b], or the finest stored
  // for the whole range.
  levelFor(a, b, px) {
    let level = 0;
    while (level + 1 < this.levels && this.width(level) > (b - a) / Math.max(px, 1)) level++;
    for (; level > 0; level--) {
      let all = true;
      for (let t = this.tileOf(a, level); t <= this.tileOf(b, level) && all; t++) {
        all = this.tiles.has(level + ":" + t);
      }
      if (all) break;
    }
    return level;
  }
  // The columns of `level` that draw [a, b], in typed arrays sized once (a zoom's garbage is
  // the JS heap's peak, issue 36 §4).
  columnsAt(level, a, b) {
    const w = this.width(level);
    const t0 = this.tileOf(a, level), t1 = this.tileOf(b, level);
    let cap = 1;
    for (let t = t0; t <= t1; t++) { const d = this.tile(level, t); if (d) cap += 2 * d.idx.length; }
    const cols = { level, w, x: new Float64Array(cap), max: new Float64Array(cap), min: new Float64Array(cap),
      res: new Float64Array(cap), sample: new Float64Array(cap), bandIds: new Set() };
    const { x: X, max: MAX, min: MIN, res: RES, sample: SAMPLE } = cols;
    let m = 0;
    // x must increase: a point replaces those before it that are not left of it (a carried point
    // at the very end can meet the trace's end).
    const put = (xv, mx, mn, rs, sm) => {
      while (m > 0 && X[m - 1] >= xv) m--;
      X[m] = xv;
      MAX[m] = mx;
      MIN[m] = mn;
      RES[m] = rs;
      SAMPLE[m++] = sm;
    };
    for (let t = t0; t <= t1; t++) {
      const d = this.tile(level, t);
      if (!d) continue;
      for (const id of d.bandIds) cols.bandIds.add(id);
      const n = d.idx.length;
      for (let k = 0; k < n; k++) {
        put(d.idx[k] * w, d.max[k], d.min[k], d.resMax[k], d.sample[k]);
        const next = k + 1 < n ? d.idx[k + 1] : (t + 1) * this.C;
        if (next !== d.idx[k] + 1 || k + 1 === n) {
          // Nothing happened until the next bucket: the state after this bucket carries on.
          put(Math.min((d.idx[k] + 1) * w, this.span), d.liveLast[k], d.liveLast[k], d.resLast[k], d.last[k]);
        }
      }
    }
    // The state after the last loaded bucket holds to the end of its tile (nothing happened there):
    // the lines reach the window's edge rather than stop as if the trace ended.
    const end = Math.min((t1 + 1) * this.C * w, this.span);
    if (m && X[m - 1] < end) put(end, MAX[m - 1], MIN[m - 1], RES[m - 1], SAMPLE[m - 1]);
    for (const k of ["x", "max", "min", "res", "sample"]) cols[k] = cols[k].subarray(0, m);
    return cols;
  }
}

// Maps raw x (microseconds or events) to the chart's x and back (the diff page aligns two files
// on steps or on the share of the trace).
function identityMap(hasTime) {
  return { fwd: (x) => x, inv: (x) => x, kind: hasTime ? "time" : "events" };
}

class TimelineChart {
  // opts: {tables, details, onPick(x, event), mapping, height, key, sync, label}
  constructor(host, dev, opts) {
    this.host = host;
    this.dev = dev;
    this.opts = opts;
    this.tables = opts.tables;
    // One decoding of the data per device: the diff page builds its charts again on every switch
    // of alignment, and decoding 40,000 bands was most of it (issue 36 §4).
    this.lod = dev.lodCache || (dev.lodCache = new Lod(dev));
    this.map = opts.mapping || identityMap(dev.has_time);
    this.span = dev.x_span;
    this.a = 0;
    this.b = this.span;
    this.cursorX = null;
    this.selected = null;
    this.guard = false;
    this.fig = { device: dev.device, negative: 0, outside: 0 };
    this.followers = [];  // f(a, b) after every change of view (the categories chart)
    this.build();
  }
  build() {
    const self = this;
    const width = Math.max(320, this.host.clientWidth || 900);
    const yFmt = { axis: byteAxis(1) };
    this.yFmt = yFmt;
    const stepped = uPlot.paths.stepped({ align: 1 });
    const opts = {
      width, height: this.opts.height || 340,
      legend: { show: false },
      scales: {
        x: { time: false, auto: false, min: self.map.fwd(0), max: self.map.fwd(self.span) },
        y: { auto: false, min: 0, max: 1 },
      },
      axes: [
        {
          stroke: "#667085", grid: { show: false }, ticks: { stroke: "#d0d5dd", size: 4 },
          splits: (u, i, lo, hi) => { self.xTicks = xAxis(lo, hi, self.map.kind, Math.max(3, u.bbox.width / devicePixelRatio / 120)); return self.xTicks.ticks; },
          values: (u, splits) => splits.map((v) => self.xTicks.label(v)),
          size: 36,
        },
        {
          stroke: "#667085", grid: { stroke: "#eef0f3", width: 1 }, ticks: { show: false },
          splits: () => yFmt.axis.ticks,
          values: (u, splits) => splits.map((v) => yFmt.axis.label(v)),
          size: 78,
        },
      ],
      series: [
        {},
        { stroke: COLORS.live, width: 1.5, paths: stepped, points: { show: false } },
        { stroke: "rgba(31,95,191,0.35)", width: 1, paths: stepped, points: { show: false } },
        { stroke: COLORS.reserved, width: 1.5, dash: [6, 3], paths: stepped, points: { show: false } },
      ],
      cursor: {
        drag: { x: true, y: false, setScale: true },
        points: { show: false },
        y: false,
        sync: this.opts.sync ? { key: this.opts.sync } : undefined,
        bind: {
          dblclick: () => () => { self.reset(); return null; },
          mousedown: (u, targ, handler) => (e) => {
            if (e.shiftKey || e.button === 1) { self.startPan(e); return null; }
            self.downAt = [e.clientX, e.clientY];
            return handler(e);
          },
        },
      },
      hooks: {
        drawAxes: [(u) => self.drawBands(u)],
        draw: [(u) => self.drawMarkers(u)],
        setScale: [(u, key) => {
          if (key !== "x" || self.guard) return;
          const s = u.scales.x;
          if (s.min == null) return;
          const a = self.map.inv(s.min), b = self.map.inv(s.max);
          if (Math.abs(a - self.a) > 1e-9 || Math.abs(b - self.b) > 1e-9) self.setView(a, b);
        }],
      },
    };
    this.cols = this.lod.view(this.a, this.b, width);
    this.u = new uPlot(opts, this.data(), this.host);
    this.u.over.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.u.over.addEventListener("mousemove", (e) => this.onHover(e));
    this.u.over.addEventListener("mouseleave", () => { hideTip(); this.setHovered(null); });
    this.u.over.addEventListener("click", (e) => this.onClick(e));
    this.host.tabIndex = 0;
    this.host.setAttribute("aria-label", "memory timeline of device " + this.dev.device +
      ": wheel or drag to zoom, shift-drag or arrow keys to pan, double-click or 0 to reset");
    this.host.addEventListener("keydown", (e) => this.onKey(e));
    const resize = new ResizeObserver(() => {
      // A chart whose host left the page (the diff page builds its charts again on a switch of
      // alignment) stops following it rather than draw itself again, unseen, at 320 px.
      if (!this.host.isConnected) { resize.disconnect(); return; }
      const w = Math.max(320, this.host.clientWidth);
      if (Math.abs(w - this.u.width) >= 1) {
        this.u.setSize({ width: w, height: this.u.height });
        this.setView(this.a, this.b, true);
      }
    });
    resize.observe(this.host);
    this.setView(this.a, this.b, true);
  }
  data() {
    const c = this.cols;
    return [c.x.map(this.map.fwd), c.max, c.min, c.res];
  }
  // Shows raw x range [a, b] (clamped), redrawn from the level-of-detail data.
  // The narrowest view: a few of the finest columns, never under 2 us or 4 events.
  minWidth() { return Math.max(this.lod.width(this.lod.levels - 1) * 4, this.dev.has_time ? 2 : 4); }
  setView(a, b, quiet) {
    const minWidth = this.minWidth();
    if (b - a < minWidth) {
      const m = (a + b) / 2;
      a = m - minWidth / 2;
      b = m + minWidth / 2;
    }
    const [lo, hi] = this.fullView();
    if (a < lo) { b += lo - a; a = lo; }
    if (b > hi) { a -= b - hi; b = hi; }
    a = Math.max(lo, a);
    const px = this.u.bbox.width / devicePixelRatio;
    // A wheel notch mostly stays on the same level and tiles: their columns and band stack are
    // then those already built, and only the scales change.
    const level = this.lod.levelFor(a, b, px);
    const key = level + ":" + this.lod.tileOf(a, level) + ":" + this.lod.tileOf(b, level);
    // The view shown already (the diff page sets both charts' views several times as it builds
    // them): nothing to draw again.
    if (key === this.viewKey && a === this.a && b === this.b && px === this.viewPx && !this.remap) return;
    this.a = a;
    this.b = b;
    this.viewPx = px;
    const fresh = key !== this.viewKey || !this.cols;
    if (fresh) {
      this.cols = this.lod.view(a, b, px);
      this.stackBands();
      this.viewKey = key;
    }
    let top = 1, last = -1;
    const c = this.cols;
    for (let i = 0; i < c.x.length; i++) {
      if (c.x[i] <= a) last = i;
      const right = i + 1 < c.x.length ? c.x[i + 1] : this.span;
      if (right < a || c.x[i] > b) continue;
      top = Math.max(top, c.max[i], c.res[i]);
      last = -2;
    }
    // A view past this device's trace (devices share one zoom): the value it ended at.
    if (last >= 0) top = Math.max(top, c.max[last], c.res[last]);
    // An OOM chart shows how far the card's memory is (memsnap oom's capacity, capped by the
    // recorded memory fraction): the scale reaches it.
    if (this.dev.capacity) top = Math.max(top, this.dev.capacity.bytes);
    this.yFmt.axis = byteAxis(top);
    this.guard = true;
    this.u.batch(() => {
      // The same columns: only the scales change (uPlot keeps the data it has).
      if (fresh || this.remap || this.u.data[0].length !== this.cols.x.length) this.u.setData(this.data(), false);
      this.remap = false;
      this.u.setScale("x", { min: this.map.fwd(a), max: this.map.fwd(b) });
      this.u.setScale("y", { min: 0, max: this.yFmt.axis.top });
    });
    this.guard = false;
    for (const f of this.followers) f(a, b);
    if (!quiet && this.opts.onView) this.opts.onView(this, a, b);
  }
  // Where the view's bands sit: stacked from 0 in allocation order at each column's sample event
  // (as PyTorch's viewer stacks them). A band's bottom changes only at a column where a band
  // below it comes or goes, so one sweep over the columns, keeping the stack of live bands, gives
  // each band its bottom as runs, one per change: stacking and drawing scale with those changes,
  // not with bands x columns (issue 36 §4, docs/BENCHMARKS.md). The result, in typed arrays
  // reused from one stacking to the next:
  //
  //   band j of the view (j ascending = allocation order; ids[j] its index in lod.bands)
  //     live over columns c0[j] .. c1[j]            (c1 < c0: not live at any column of the view)
  //     runs runAt[j] .. runAt[j + 1] - 1:          run r covers columns runCol[r] .. up to the
  //                                                 next run's first (or c1[j]) at runBot[r]
  //   bandSum[k]: the bands' bytes at column k;     rest[k] = live - bandSum[k], the grey band
  stackBands() {
    const c = this.cols, n = c.x.length, sample = c.sample, bands = this.lod.bands;
    const ids = Int32Array.from(c.bandIds).sort();
    const m = ids.length;
    const S = this.scratch || (this.scratch = {});
    const buf = (name, Type, len) => {
      if (!S[name] || S[name].length < len) S[name] = new Type(Math.max(len, Math.ceil(1.5 * (S[name] ? S[name].length : 0))));
      return S[name];
    };
    const c0 = buf("c0", Int32Array, m), c1 = buf("c1", Int32Array, m), size = buf("size", Float64Array, m);
    const startHead = buf("startHead", Int32Array, n + 1).fill(-1, 0, n + 1);
    const endHead = buf("endHead", Int32Array, n + 1).fill(-1, 0, n + 1);
    const startNext = buf("startNext", Int32Array, m), endNext = buf("endNext", Int32Array, m);
    // Each band's columns: samples never decrease, so the columns where it is live are one run.
    for (let j = m - 1; j >= 0; j--) {
      const b = bands[ids[j]];
      let lo = 0, hi = n;
      while (lo < hi) { const q = (lo + hi) >> 1; if (sample[q] < b.alloc) lo = q + 1; else hi = q; }
      const first = lo;
      hi = n;
      while (lo < hi) { const q = (lo + hi) >> 1; if (sample[q] < b.free) lo = q + 1; else hi = q; }
      c0[j] = first;
      c1[j] = lo - 1;
      size[j] = b.size;
      // Lists of the bands that come at each column and go after it, each in ascending j.
      if (lo - 1 >= first) {
        startNext[j] = startHead[first];
        startHead[first] = j;
        endNext[j] = endHead[lo];
        endHead[lo] = j;
      }
    }
    // The sweep. live[0 .. liveN) holds the stack's bands bottom up (ascending j), pos[j] where
    // band j is in it, bottom[j] where it sits now. A run starts where a band comes and wherever
    // its bottom changes; runs are recorded as (band, column, bottom) in sweep order, then
    // grouped by band.
    const live = buf("live", Int32Array, m), pos = buf("pos", Int32Array, m), tail = buf("tail", Int32Array, m);
    const gone = buf("gone", Uint8Array, m).fill(0, 0, m), bottom = buf("bottom", Float64Array, m);
    const bandSum = new Float64Array(n);
    let R = 0, liveN = 0, total = 0;
    let rBand = buf("rBand", Int32Array, 1024), rCol = buf("rCol", Int32Array, 1024), rBot = buf("rBot", Float64Array, 1024);
    const record = (j, k, v) => {
      if (R === rBand.length) {
        const grow = (name, Type) => { const o = S[name]; S[name] = new Type(2 * o.length); S[name].set(o); return S[name]; };
        rBand = grow("rBand", Int32Array);
        rCol = grow("rCol", Int32Array);
        rBot = grow("rBot", Float64Array);
      }
      rBand[R] = j;
      rCol[R] = k;
      rBot[R++] = v;
    };
    for (let k = 0; k < n; k++) {
      // The lowest place in the stack that changes: the lowest band that went, or where the first
      // band that comes goes in (the top, as bands come in allocation order).
      let low = liveN;
      for (let j = endHead[k]; j >= 0; j = endNext[j]) { gone[j] = 1; if (pos[j] < low) low = pos[j]; }
      const add = startHead[k];
      if (add >= 0 && liveN && add < live[liveN - 1]) {
        let lo = 0, hi = liveN;
        while (lo < hi) { const q = (lo + hi) >> 1; if (live[q] < add) lo = q + 1; else hi = q; }
        if (lo < low) low = lo;
      }
      if (low < liveN || add >= 0) {
        // The stack above `low` again: the bands that stay, merged with those that come.
        let s = 0;
        for (let r = low; r < liveN; r++) if (!gone[live[r]]) tail[s++] = live[r];
        let w = low, t = 0, next = add, acc = low ? bottom[live[low - 1]] + size[live[low - 1]] : 0;
        while (t < s || next >= 0) {
          let j;
          if (next >= 0 && (t >= s || next < tail[t])) {
            j = next;
            next = startNext[next];
            record(j, k, acc);
          } else {
            j = tail[t++];
            if (bottom[j] !== acc) record(j, k, acc);
          }
          bottom[j] = acc;
          live[w] = j;
          pos[j] = w++;
          acc += size[j];
        }
        liveN = w;
        total = acc;
      }
      bandSum[k] = total;
    }
    // The runs grouped by band, in column order within each.
    const runAt = buf("runAt", Int32Array, m + 1).fill(0, 0, m + 1);
    for (let r = 0; r < R; r++) runAt[rBand[r] + 1]++;
    for (let j = 0; j < m; j++) runAt[j + 1] += runAt[j];
    const fillAt = buf("fillAt", Int32Array, m);
    fillAt.set(runAt.subarray(0, m));
    const runCol = buf("runCol", Int32Array, R), runBot = buf("runBot", Float64Array, R);
    for (let r = 0; r < R; r++) {
      const at = fillAt[rBand[r]]++;
      runCol[at] = rCol[r];
      runBot[at] = rBot[r];
    }
    let shown = 0;
    for (let j = 0; j < m; j++) if (c1[j] >= c0[j]) shown++;
    this.stack = { m, ids, c0, c1, runAt, runCol, runBot, runs: R, shown };
    this.bandSum = bandSum;
    this.rest = new Float64Array(n);
    let negative = 0;
    for (let k = 0; k < n; k++) {
      this.rest[k] = c.max[k] - bandSum[k];
      if (this.rest[k] < 0 || c.min[k] < 0 || c.res[k] < 0) negative++;
    }
    this.fig.negative = negative;
  }
  // The run of band j of the view that covers column k (k within its columns).
  runOf(j, k) {
    const st = this.stack;
    let lo = st.runAt[j], hi = st.runAt[j + 1] - 1;
    while (lo < hi) { const q = (lo + hi + 1) >> 1; if (st.runCol[q] <= k) lo = q; else hi = q - 1; }
    return lo;
  }
  // Band j's bottom at column k.
  bottomAt(j, k) { return this.stack.runBot[this.runOf(j, k)]; }
  // Another alignment of the x axis (the diff page's switch): the same columns and bands, mapped
  // again at the next setView, and nothing hovered or clicked, as on a chart built anew.
  setMapping(map) {
    this.map = map;
    this.remap = true;
    this.selected = null;
    this.hovered = null;
  }
  // The widest view: the trace, or the range shared with another chart (the diff page).
  fullView() {
    return [this.map.lo != null ? this.map.inv(this.map.lo) : 0,
      this.map.limit != null ? this.map.inv(this.map.limit) : this.span];
  }
  reset() { const [lo, hi] = this.fullView(); this.setView(lo, hi); }
  colRight(k) { return k + 1 < this.cols.x.length ? this.cols.x[k + 1] : this.span; }
  // The bands and the grey band, painted into a pixel buffer of the plot and drawn as one image
  // (issue 36 §4): thousands of anti-aliased step polygons cost the browser hundreds of ms to
  // rasterize on every notch, the buffer a few. Each column covers the whole pixels its rounded
  // edges bound, each band the rows its rounded top and bottom bound (stacked, they tile), over the
  // grey band. Only the band under the pointer and the clicked one are drawn again as paths, for
  // their outlines.
  drawBands(u) {
    const ctx = u.ctx, bb = u.bbox, c = this.cols, n = c.x.length, st = this.stack;
    // The columns in view: first is the last starting at or before a (or the first), last the
    // last starting before b.
    let lo = 0, hi = n - 1;
    while (lo < hi) { const q = (lo + hi + 1) >> 1; if (this.colRight(q - 1) <= this.a) lo = q; else hi = q - 1; }
    const first = lo;
    hi = n - 1;
    while (lo < hi) { const q = (lo + hi + 1) >> 1; if (c.x[q] < this.b) lo = q; else hi = q - 1; }
    const last = n ? Math.max(first, lo) : -1;
    // Pixel edges of those columns (clamped to the view) and a linear y: no per-vertex lookups.
    const S = this.scratch;
    if (!S.edge || S.edge.length < n + 1) { S.edge = new Float64Array(n + 1); S.P = new Int32Array(n + 1); }
    const edge = S.edge, P = S.P;
    const yTop = this.yFmt.axis.top, base = bb.top + bb.height, scale = bb.height / yTop;
    const Y = (v) => base - v * scale;
    const W = Math.max(1, Math.round(bb.width)), H = Math.max(1, Math.round(bb.height));
    for (let k = first; k <= last + 1; k++) {
      const x = k < n ? c.x[k] : this.span;
      edge[k] = u.valToPos(this.map.fwd(Math.min(Math.max(x, this.a), this.b)), "x", true);
      P[k] = Math.max(0, Math.min(W, Math.round(edge[k] - bb.left)));
    }
    if (!this.img || this.img.width !== W || this.img.height !== H) {
      this.img = new ImageData(W, H);
      this.px = new Uint32Array(this.img.data.buffer);
      this.off = document.createElement("canvas");
      this.off.width = W;
      this.off.height = H;
      this.offCtx = this.off.getContext("2d");
    }
    const px = this.px;
    px.fill(0);
    // Rows of the buffer: row(v) is the first row at or below the value v (rounded), clamped.
    const r0 = base - bb.top + 0.5;
    // Pixel columns x0 .. x1 - 1 of rows ra .. rb - 1.
    const fill = (x0, x1, ra, rb, color) => {
      if (x1 <= x0 || rb <= ra) return;
      if (x1 - x0 === 1) {
        for (let i = ra * W + x0, end = rb * W + x0; i < end; i += W) px[i] = color;
      } else {
        for (let r = ra; r < rb; r++) px.fill(color, r * W + x0, r * W + x1);
      }
    };
    let outside = 0;
    let drawnBands = 0, thinBands = 0;
    this.fig.hoveredDrawn = null;
    const outlined = [];
    // The grey band first, under the whole curve; the bands over it, each from its rounded top to
    // its rounded bottom (a band under a fiftieth of a pixel would never own a row: left grey).
    const grey = rgbaOfCss(COLORS.rest);
    for (let k = first; k <= last; k++) {
      const y0 = Y(this.bandSum[k]), y1 = Y(c.max[k]);
      if (y1 < bb.top - 0.5 || y0 > base + 0.5) outside++;
      if (base - y1 < 0.05) continue;
      fill(P[k], P[k + 1], Math.max(0, Math.floor(y1 - bb.top + 0.5)), H, grey);
    }
    // Each band run by run: a run is one rectangle, from its first column's left edge to its last
    // column's right edge, the pixels its columns would cover one by one.
    const bands = this.lod.bands, runCol = st.runCol, runBot = st.runBot, runAt = st.runAt;
    for (let j = 0; j < st.m; j++) {
      const k0 = Math.max(st.c0[j], first), k1 = Math.min(st.c1[j], last);
      if (k1 < k0) continue;
      const band = bands[st.ids[j]], size = band.size;
      const rFirst = this.runOf(j, k0), rLast = this.runOf(j, k1);
      if (Y(runBot[rFirst] + size) < bb.top - 0.5 || Y(runBot[rLast]) > base + 0.5) outside++;
      if (this.hovered === band.id || this.selected === band.id) outlined.push([j, k0, k1, rFirst, rLast]);
      drawnBands++;
      if (size * scale < 0.02) { thinBands++; continue; }  // a fiftieth of a pixel: no row of its own
      const color = rgbaOf(band.stack >= 0 ? band.stack : 997 + band.id);
      for (let r = rFirst; r <= rLast; r++) {
        const from = Math.max(runCol[r], k0), to = r + 1 < runAt[j + 1] ? Math.min(runCol[r + 1] - 1, k1) : k1;
        const b = runBot[r];
        let ra = Math.floor(r0 - (b + size) * scale), rb = Math.floor(r0 - b * scale);
        if (ra < 0) ra = 0;
        if (rb > H) rb = H;
        fill(P[from], P[to + 1], ra, rb, color);
      }
    }
    this.fig.thinBands = thinBands;
    this.offCtx.putImageData(this.img, 0, 0);
    ctx.drawImage(this.off, bb.left, bb.top);
    ctx.save();
    ctx.beginPath();
    ctx.rect(bb.left, bb.top, bb.width, bb.height);
    ctx.clip();
    for (const [j, k0, k1, rFirst, rLast] of outlined) {
      const band = bands[st.ids[j]], size = band.size;
      // The band is a step shape: vertices only where its runs meet.
      ctx.beginPath();
      let y = Y(runBot[rFirst] + size);
      ctx.moveTo(edge[k0], y);
      for (let r = rFirst + 1; r <= rLast; r++) {
        const ny = Y(runBot[r] + size);
        if (ny !== y) { ctx.lineTo(edge[runCol[r]], y); ctx.lineTo(edge[runCol[r]], ny); y = ny; }
      }
      ctx.lineTo(edge[k1 + 1], y);
      y = Y(runBot[rLast]);
      ctx.lineTo(edge[k1 + 1], y);
      for (let r = rLast; r > rFirst; r--) {
        const ny = Y(runBot[r - 1]);
        if (ny !== y) { ctx.lineTo(edge[runCol[r]], y); ctx.lineTo(edge[runCol[r]], ny); y = ny; }
      }
      ctx.lineTo(edge[k0], y);
      ctx.closePath();
      if (this.hovered === band.id && this.selected !== band.id) {
        // The band under the pointer: outlined, so that a thin one among many is found.
        ctx.strokeStyle = "#101828";
        ctx.lineWidth = devicePixelRatio;
        ctx.stroke();
        this.fig.hoveredDrawn = band.id;
      }
      if (this.selected === band.id) {
        ctx.strokeStyle = "#000";
        ctx.lineWidth = 1.5 * devicePixelRatio;
        ctx.stroke();
        // A band under a few pixels tall: its outline alone would be a hairline, so a box of at
        // least 6 px around it shows which band was clicked.
        const yTopPx = Y(runBot[rFirst] + size), thin = 6 * devicePixelRatio;
        if (y - yTopPx < thin) {
          const mid = (y + yTopPx) / 2;
          ctx.strokeRect(edge[k0], mid - thin / 2, Math.max(edge[k1 + 1] - edge[k0], 2 * devicePixelRatio), thin);
          this.fig.selectedBox = thin / devicePixelRatio;
        }
      }
    }
    ctx.restore();
    this.fig.outside = outside;
    this.fig.drawnBands = drawnBands;
    this.draws = (this.draws || 0) + 1;
  }
  // The training steps (the steps `--at step:N` finds): every other step shaded, each labelled
  // at the bottom where there is room.
  drawSteps(u) {
    const steps = this.dev.steps;
    this.fig.steps = { n: steps ? steps.x.length - 1 : 0, drawn: 0, method: steps ? steps.method : null };
    if (!steps) return;
    const ctx = u.ctx, bb = u.bbox, dpr = devicePixelRatio, X = (x) => u.valToPos(this.map.fwd(Math.min(Math.max(x, this.a), this.b)), "x", true);
    ctx.save();
    ctx.font = 10 * dpr + "px system-ui, sans-serif";
    ctx.textAlign = "left";
    for (let k = 0; k + 1 < steps.x.length; k++) {
      const x0 = steps.x[k], x1 = steps.x[k + 1];
      if (x1 < this.a || x0 > this.b) continue;
      const p0 = X(x0), p1 = X(x1);
      this.fig.steps.drawn++;
      if (k % 2) { ctx.fillStyle = "rgba(16,24,40,0.045)"; ctx.fillRect(p0, bb.top, p1 - p0, bb.height); }
      ctx.strokeStyle = "rgba(16,24,40,0.25)";
      ctx.lineWidth = dpr;
      ctx.beginPath();
      ctx.moveTo(Math.round(p0) + 0.5, bb.top + bb.height - 14 * dpr);
      ctx.lineTo(Math.round(p0) + 0.5, bb.top + bb.height);
      ctx.stroke();
      const label = "step " + k;
      if (p1 - p0 > 12 * dpr && p1 - p0 > textWidth(ctx, label) + 8 * dpr) {
        ctx.fillStyle = "#475467";
        ctx.fillText(label, p0 + 3 * dpr, bb.top + bb.height - 4 * dpr);
      }
    }
    ctx.restore();
  }
  // The program's annotation regions (record_function ranges) as bars along the top of the plot,
  // nested ranges on lanes below their parents, named where there is room.
  drawAnnotations(u) {
    const an = this.dev.annotations;
    this.fig.annotations = { n: an ? an.n : 0, drawn: 0 };
    if (!an || !this.dev.has_time) return;
    const ctx = u.ctx, bb = u.bbox, dpr = devicePixelRatio, laneH = 12 * dpr;
    const X = (x) => u.valToPos(this.map.fwd(Math.min(Math.max(x, this.a), this.b)), "x", true);
    // Each range's lane and colour, once per device: they do not change with the view (thousands
    // of ranges on a long trace, redrawn on every notch of the wheel).
    if (!an.lanes) {
      const lanes = [];
      an.lanes = an.regions.map(([x0, x1]) => {
        // Lane: the first whose last range has ended (ranges come in order of their begin).
        let lane = lanes.findIndex((end) => end <= x0);
        if (lane < 0) { lane = lanes.length; lanes.push(x1); } else lanes[lane] = x1;
        return lane;
      });
      const colors = new Map();
      an.colors = an.regions.map(([, , name]) => {
        if (!colors.has(name)) {
          let hash = 0;
          for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
          colors.set(name, "hsla(" + (Math.abs(hash) % 360) + ",55%,55%,0.35)");
        }
        return colors.get(name);
      });
    }
    ctx.save();
    ctx.font = 10 * dpr + "px system-ui, sans-serif";
    ctx.textAlign = "left";
    for (let i = 0; i < an.regions.length; i++) {
      const region = an.regions[i], x0 = region[0], x1 = region[1], name = region[2], lane = an.lanes[i];
      if (lane > 3 || x1 < this.a || x0 > this.b) continue;
      const p0 = X(x0), p1 = Math.max(X(x1), p0 + dpr), y = bb.top + lane * laneH;
      ctx.fillStyle = an.colors[i];
      ctx.fillRect(p0, y, p1 - p0, laneH - dpr);
      this.fig.annotations.drawn++;
      if (p1 - p0 > 12 * dpr && p1 - p0 > textWidth(ctx, name) + 6 * dpr) {
        ctx.fillStyle = "#344054";
        ctx.fillText(name, p0 + 3 * dpr, y + laneH - 3 * dpr);
      }
    }
    ctx.restore();
  }
  // The card's capacity across the plot, labelled at its left end.
  capacityLine(u, cap) {
    const ctx = u.ctx, bb = u.bbox, py = Math.round(u.valToPos(cap.bytes, "y", true)) + 0.5;
    ctx.save();
    ctx.strokeStyle = COLORS.oom;
    ctx.lineWidth = devicePixelRatio;
    ctx.setLineDash([2 * devicePixelRatio, 2 * devicePixelRatio]);
    ctx.beginPath();
    ctx.moveTo(bb.left, py);
    ctx.lineTo(bb.left + bb.width, py);
    ctx.stroke();
    ctx.font = "600 " + 11 * devicePixelRatio + "px system-ui, sans-serif";
    ctx.fillStyle = COLORS.oom;
    ctx.textAlign = "left";
    const text = cap.what + " " + fmtBytes(cap.bytes);
    ctx.fillText(text, bb.left + 4 * devicePixelRatio, py + (py - bb.top < 16 * devicePixelRatio ? 13 : -4) * devicePixelRatio);
    ctx.restore();
    this.fig.capacity = { bytes: cap.bytes, y: py / devicePixelRatio, top: bb.top / devicePixelRatio, bottom: (bb.top + bb.height) / devicePixelRatio, label: text };
  }
  marker(u, x, color, text, dash) {
    if (x < this.a || x > this.b) return;
    const ctx = u.ctx, bb = u.bbox, px = Math.round(u.valToPos(this.map.fwd(x), "x", true)) + 0.5;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = devicePixelRatio;
    ctx.setLineDash(dash ? dash.map((d) => d * devicePixelRatio) : []);
    ctx.beginPath();
    ctx.moveTo(px, bb.top);
    ctx.lineTo(px, bb.top + bb.height);
    ctx.stroke();
    if (text) {
      ctx.font = "600 " + 11 * devicePixelRatio + "px system-ui, sans-serif";
      ctx.fillStyle = color;
      const w = ctx.measureText(text).width, pad = 4 * devicePixelRatio;
      const right = px + pad + w > bb.left + bb.width;
      const x0 = right ? px - pad - w : px + pad, x1 = x0 + w;
      // A label that would overlap one already drawn (the peak and an OOM close together) goes
      // on the first row below where it fits.
      const rows = this.labelRows || (this.labelRows = []);
      let row = 0;
      while (rows[row] && rows[row].some(([a, b]) => x0 < b + pad && x1 > a - pad)) row++;
      (rows[row] || (rows[row] = [])).push([x0, x1]);
      ctx.textAlign = "left";
      // A white halo: the label stays legible over the bands, the curve and the capacity line.
      ctx.setLineDash([]);
      ctx.lineWidth = 3 * devicePixelRatio;
      ctx.lineJoin = "round";
      ctx.strokeStyle = "rgba(255,255,255,0.9)";
      ctx.strokeText(text, x0, bb.top + (12 + 14 * row) * devicePixelRatio);
      ctx.fillText(text, x0, bb.top + (12 + 14 * row) * devicePixelRatio);
    }
    ctx.restore();
  }
  drawMarkers(u) {
    const dev = this.dev, ht = dev.has_time;
    this.labelRows = [];
    if (dev.peak) this.marker(u, dev.peak.x, COLORS.peak, "peak " + fmtBytes(dev.peak.bytes) + " " + fmtMoment(dev.peak.x, dev.peak.event, ht), [3, 3]);
    for (const o of dev.ooms || []) this.marker(u, o.x, COLORS.oom, "OOM (" + fmtBytes(o.bytes) + " requested)", null);
    if (dev.capacity) this.capacityLine(u, dev.capacity);
    this.drawSteps(u);
    this.drawAnnotations(u);
    this.placeCursor();
  }
  // The state view's moment: a line over the plot (a DOM element, so moving it redraws nothing).
  setCursor(x) { this.cursorX = x; this.placeCursor(); }
  placeCursor() {
    if (!this.cursorEl) {
      this.cursorEl = h("div", { class: "time-cursor" });
      this.u.over.append(this.cursorEl);
    }
    const x = this.cursorX;
    // On the peak's own line the cursor would hide it (the state view opens at the peak): the
    // dashed peak line marks that moment already.
    const px = (v) => Math.round(this.u.valToPos(this.map.fwd(v), "x"));
    const onPeak = x != null && this.dev.peak && px(x) === px(this.dev.peak.x);
    const show = x != null && x >= this.a && x <= this.b && !onPeak;
    this.cursorEl.style.display = show ? "block" : "none";
    if (show) this.cursorEl.style.left = px(x) + "px";
  }
  // The column under a raw x, with the band stack there: what the tooltip and the tests read.
  columnAt(x) {
    const c = this.cols;
    let lo = 0, hi = c.x.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (c.x[m] <= x) lo = m; else hi = m - 1; }
    const bands = [], st = this.stack;
    for (let j = 0; j < st.m; j++) {
      if (lo >= st.c0[j] && lo <= st.c1[j]) bands.push({ id: st.ids[j], size: this.lod.bands[st.ids[j]].size, bottom: this.bottomAt(j, lo) });
    }
    return { index: lo, x: c.x[lo], right: this.colRight(lo), event: c.sample[lo], live: c.max[lo], live_min: c.min[lo],
      reserved: c.res[lo], rest: this.rest[lo], bands_sum: this.bandSum[lo], bands };
  }
  xAtPointer(e) {
    const r = this.u.over.getBoundingClientRect();
    return this.map.inv(this.u.posToVal(e.clientX - r.left, "x"));
  }
  bandAt(col, y) {
    for (const b of col.bands) if (y >= b.bottom && y < b.bottom + b.size) return this.lod.bands[b.id];
    return null;
  }
  // What a band is, in the user's terms: its site's label (as memsnap top names it), its category,
  // size and when it was alive; then where it is (address, stream) and what the trace knows of it.
  bandSite(b) { return this.tables.sites && b.site >= 0 ? this.tables.sites[b.site] : null; }
  bandCategory(b) { return this.tables.categories ? this.tables.categories[b.cat] : null; }
  // The rule that decided the band's category (docs/attribution.md, "Rules").
  bandRule(b) { return this.tables.rules ? this.tables.rules[b.rule] : null; }
  bandText(b) {
    const ht = this.dev.has_time;
    // "allocated at 683.3 ms": a time since the trace's first event, not a duration.
    const alloc = b.alloc < 0 ? "before the trace" : "at " + fmtX(b.alloc_x, ht);
    const free = b.free === Infinity ? ", still live at the end" : ", freed at " + fmtX(b.free_x, ht);
    const life = b.alloc >= 0 && b.free !== Infinity ? " (lived " + fmtSpan(b.free_x - b.alloc_x, ht) + ")" : "";
    const cat = this.bandCategory(b), rule = this.bandRule(b);
    return (cat ? cat.replace("_", " ") + (rule ? " (rule " + rule + ")" : "") + ", " : "") + fmtBytes(b.size) + " (" + fmtCount(b.size) + " B requested, " +
      fmtBytes(b.rounded) + " block)\n" + "allocated " + alloc + free + life + "\n" +
      "address " + hex(b.addr) + ", stream " + b.stream + ", " + CLASS_TEXT[b.cls] +
      (b.metadata ? "\nmetadata: " + b.metadata : "") +
      (b.compile ? "\ncompile context: " + b.compile : "");
  }
  stackLabel(b) { return b.cls === 1 ? "stack of the free (the allocation is older than the trace):\n" : ""; }
  // The hover: the label in bold, the figures, then the user's frames of the stack (shortened).
  bandTip(b) {
    const site = this.bandSite(b);
    const parts = stackParts(this.tables, b.stack);
    const out = [];
    if (site) out.push(h("b", { class: "tip-site", text: site }), "\n");
    const cat = this.bandCategory(b);
    if (cat) {
      const c = CATEGORIES.find(([k]) => k === cat);
      const sw = h("span", { class: "swatch" });
      if (c) sw.style.background = c[2];
      out.push(sw, " ");
    }
    out.push(this.bandText(b) + "\n\n" + this.stackLabel(b) + stackSummary(parts) +
      (parts && parts.all.length ? "\nclick the band for the whole stack" : ""));
    return out;
  }
  onHover(e) {
    const r = this.u.over.getBoundingClientRect();
    const x = this.xAtPointer(e);
    if (x < this.a || x > this.b) { hideTip(); return; }
    const col = this.columnAt(x);
    const y = this.u.posToVal(e.clientY - r.top, "y");
    const b = this.bandAt(col, y);
    this.setHovered(b ? b.id : null);
    if (b) {
      showTip(e, this.bandTip(b));
      return;
    }
    const ht = this.dev.has_time;
    const range = col.live_min !== col.live ? " (lowest " + fmtBytes(col.live_min) + ")" : "";
    showTip(e, fmtX(col.x, ht) + (col.right - col.x > (ht ? 1 : 1) ? " \u2013 " + fmtX(col.right, ht) : "") +
      "\nlive " + fmtBytes(col.live) + range + "\nreserved " + fmtBytes(col.reserved) +
      "\nin bands " + fmtBytes(col.bands_sum) + ", smaller allocations (grey) " + fmtBytes(col.rest) +
      (y <= col.live ? "" : "\nclick to see the allocator's segments here"));
  }
  setHovered(id) {
    if (this.hovered === id) return;
    this.hovered = id;
    this.u.redraw(false, false);
  }
  onClick(e) {
    if (this.downAt && Math.hypot(e.clientX - this.downAt[0], e.clientY - this.downAt[1]) > 4) return;  // a drag
    const r = this.u.over.getBoundingClientRect();
    const x = this.xAtPointer(e);
    const col = this.columnAt(x);
    const b = this.bandAt(col, this.u.posToVal(e.clientY - r.top, "y"));
    this.selected = b ? b.id : null;
    if (b && this.opts.details) {
      const lines = this.bandText(b).split("\n");
      const site = this.bandSite(b);
      const parts = stackParts(this.tables, b.stack);
      const whole = parts && parts.all.length ? h("details", {}, h("summary", { text: "whole stack, innermost first (" +
        parts.all.length + " frames)" }), h("pre", { text: stackText(parts.all) })) : null;
      this.opts.details.replaceChildren(h("b", { class: "band-site", text: site || lines[0] }),
        h("div", { class: "note", text: (site ? lines : lines.slice(1)).join(" \u00b7 ") }),
        h("pre", { text: this.stackLabel(b) + stackSummary(parts, 12) }), whole);
    }
    this.u.redraw(false, false);
    if (this.opts.onPick) this.opts.onPick(x, col.event);
  }
  onWheel(e) {
    e.preventDefault();
    const A = this.map.fwd(this.a), B = this.map.fwd(this.b);
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const d = (e.shiftKey ? e.deltaY : e.deltaX) / 600 * (B - A);
      this.setMapped(A + d, B + d);
      return;
    }
    const r = this.u.over.getBoundingClientRect();
    const at = this.u.posToVal(e.clientX - r.left, "x");
    const f = Math.exp(Math.max(-1, Math.min(1, e.deltaY * 0.002)));
    this.setMapped(at - (at - A) * f, at + (B - at) * f);
  }
  setMapped(A, B) { this.setView(this.map.inv(A), this.map.inv(B)); }
  startPan(e) {
    const x0 = e.clientX, A = this.map.fwd(this.a), B = this.map.fwd(this.b);
    const perPx = (B - A) / (this.u.bbox.width / devicePixelRatio);
    const move = (m) => { const d = (x0 - m.clientX) * perPx; this.setMapped(A + d, B + d); };
    const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }
  onKey(e) {
    const A = this.map.fwd(this.a), B = this.map.fwd(this.b), w = B - A, m = (A + B) / 2;
    const keys = {
      ArrowLeft: () => this.setMapped(A - w / 4, B - w / 4),
      ArrowRight: () => this.setMapped(A + w / 4, B + w / 4),
      "+": () => this.setMapped(m - w / 4, m + w / 4),
      "=": () => this.setMapped(m - w / 4, m + w / 4),
      "-": () => this.setMapped(m - w, m + w),
      "0": () => this.reset(),
      Escape: () => this.reset(),
      p: () => this.zoomTo(this.dev.peak ? this.dev.peak.x : 0),
    };
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  }
  // Zooms around raw x so that about `share` of the trace is visible.
  zoomTo(x, share) {
    const w = this.span * (share || 0.02);
    this.setView(x - w / 2, x + w / 2);
  }
  figures() {
    const bb = this.u.bbox, r = this.u.over.getBoundingClientRect(), dpr = devicePixelRatio;
    return Object.assign({}, this.fig, {
      view: [this.a, this.b], min_width: this.minWidth(), level: this.cols.level, bucket_width: this.cols.w, y_top: this.yFmt.axis.top,
      plot: { left: r.left, top: r.top, width: bb.width / dpr, height: bb.height / dpr },
      columns: this.cols.x.length, view_bands: this.stack.shown, band_runs: this.stack.runs,
    });
  }
}

const CLASS_TEXT = [
  "allocated and freed in the trace", "allocated before the trace began (only its free is recorded)",
  "live at the end but never seen in the trace (a \u201cghost\u201d: allocated before the trace began)",
  "allocated in the trace, still live at the end",
];
