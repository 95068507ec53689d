// Numbers as people read them: sizes in powers of 1024, counts with separators, times in one unit.
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

// Written as the CLI writes them (util/format.cc FormatBytes: whole bytes, else one decimal), so
// a size on the page reads the same as in `memsnap summary` and in the OOM answer's lines.
function fmtBytes(n) {
  const neg = n < 0;
  let v = Math.abs(n), i = 0;
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  const s = i === 0 ? v.toFixed(0) : v.toFixed(1);
  return (neg ? "-" : "") + s + "\u00a0" + UNITS[i];  // a size never wraps inside
}
function fmtDelta(n) { return (n > 0 ? "+" : "") + fmtBytes(n); }
// -0 (an axis origin rounded from a hair below 0) reads 0.
function fmtCount(n) { const v = Number(n); return (v === 0 ? 0 : v).toLocaleString("en-US"); }
// "1 block", "2 blocks".
function fmtCountOf(n, one, many) { return fmtCount(n) + "\u00a0" + (Number(n) === 1 ? one : many || one + "s"); }
function fmtPct(f) { return (100 * f).toFixed(1) + "%"; }
// A duration or a position in microseconds, in the unit that suits its size.
function fmtMicros(us) {
  const a = Math.abs(us);
  if (a >= 1e6) return trimZeros((us / 1e6).toFixed(a >= 1e8 ? 1 : 3)) + "\u00a0s";
  if (a >= 1e3) return trimZeros((us / 1e3).toFixed(a >= 1e5 ? 1 : 2)) + "\u00a0ms";
  return Math.round(us) + "\u00a0\u00b5s";
}
function trimZeros(s) { return s.indexOf(".") < 0 ? s : s.replace(/\.?0+$/, ""); }
// x of a timeline (microseconds since the first event, or an event index) as a label.
function fmtX(x, hasTime) {
  if (!hasTime) return "event " + fmtCount(Math.round(x));
  return fmtMicros(x);
}
function fmtSpan(dx, hasTime) {
  if (!hasTime) return fmtCountOf(Math.round(dx), "event");
  return fmtMicros(dx);
}
function hex(n) { return "0x" + Math.round(n).toString(16); }
// A word for a POSIX shell: quoted unless it is made of safe characters only.
function shellWord(w) { return /^[\w@%+=:,.\/-]+$/.test(w) ? w : "'" + String(w).replace(/'/g, "'\\''") + "'"; }
