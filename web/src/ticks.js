// Axis ticks at round values, in one unit per axis, the top tick at or above the highest value.
function niceStep(span, n) {
  const raw = span / Math.max(n, 1);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw * 0.999999) return m * p;
  return 10 * p;
}
function decimalsOf(step) {
  let d = 0;
  while (d < 9 && Math.abs(step * Math.pow(10, d) - Math.round(step * Math.pow(10, d))) > 1e-9 * Math.pow(10, d)) d++;
  return d;
}
// Byte axis from 0 to at least `max`: {unit, scale, step, top, ticks, label(v)}.
function byteAxis(max, count) {
  max = Math.max(max, 1);
  let u = 0;
  while (u < UNITS.length - 1 && max / Math.pow(1024, u + 1) >= 1) u++;
  const scale = Math.pow(1024, u);
  const step = niceStep(max / scale, count || 5);
  const top = Math.ceil(max / scale / step - 1e-9) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(v * scale);
  const d = decimalsOf(step);
  return {
    unit: UNITS[u], scale, step: step * scale, top: top * scale, ticks,
    label: (v) => (v === 0 ? "0" : (v / scale).toFixed(d)) + " " + UNITS[u],
  };
}
// x axis ticks between lo and hi (microseconds or events, or already-mapped units).
function xAxis(lo, hi, kind, count) {
  const span = Math.max(hi - lo, 1e-9);
  // Events are whole: a step under one would label "0 0 0 1 1 1".
  const step = kind === "events" ? Math.max(1, niceStep(span, count || 7)) : niceStep(span, count || 7);
  const ticks = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-6; v += step) ticks.push(v === 0 ? 0 : v);
  let label;
  if (kind === "time") {
    // One unit for the whole axis, chosen by its largest value; decimals by the step.
    const top = Math.max(Math.abs(lo), Math.abs(hi));
    const [scale, unit] = top >= 1e6 ? [1e6, "s"] : top >= 1e3 ? [1e3, "ms"] : [1, "us"];
    const d = decimalsOf(step / scale);
    label = (v) => (v === 0 ? "0" : (v / scale).toFixed(d)) + " " + unit;
  } else if (kind === "events") {
    label = (v) => fmtCount(Math.round(v));
  } else if (kind === "steps") {
    const d = decimalsOf(step);
    label = (v) => "step " + v.toFixed(d);
  } else {  // share of the trace
    const d = decimalsOf(step);
    label = (v) => v.toFixed(d) + "%";
  }
  return { step, ticks, label };
}
