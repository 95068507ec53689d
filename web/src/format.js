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
// A time, written as the CLI writes it (src/util/format.cpp FormatDuration and
// FormatRelativeTime), so "+1.329 s" on the page is "+1.329 s" in `memsnap summary` and in the OOM
// answer: whole microseconds under a millisecond, one decimal of a millisecond under a second,
// milliseconds of a second under ten minutes. The page's only way of writing a time.
function fmtDuration(us) {
  const a = Math.abs(Math.round(us)), MIN = 60e6, HOUR = 60 * MIN, DAY = 24 * HOUR;
  if (a < 1000) return a + "\u00a0us";
  if (a < 1e6) return (a / 1e3).toFixed(1) + "\u00a0ms";
  if (a < 10 * MIN) return (a / 1e6).toFixed(3) + "\u00a0s";
  if (a < HOUR) return Math.floor(a / MIN) + "\u00a0min " + ((a % MIN) / 1e6).toFixed(3) + "\u00a0s";
  if (a < 2 * DAY) return Math.floor(a / HOUR) + "\u00a0h " + Math.floor((a % HOUR) / MIN) + "\u00a0min";
  return (a / DAY).toFixed(1) + "\u00a0days";
}
// A moment since the trace's first event (FormatRelativeTime): "+350 us", "+1.329 s".
function fmtRelTime(us) { return (Math.round(us) < 0 ? "-" : "+") + fmtDuration(us); }
// x of a timeline (microseconds since the first event, or an event index) as a label.
function fmtX(x, hasTime) {
  if (!hasTime) return "event " + fmtCount(Math.round(x));
  return fmtRelTime(x);
}
// The moment after event e (x its position) as summary names it: "at +1.329 s", "after event 5",
// "before the first event" (e < 0, which x = 0 would misname as the first event's moment).
function fmtMoment(x, e, hasTime) {
  if (e < 0) return "before the first event";
  return hasTime ? "at " + fmtRelTime(x) : "after event " + fmtCount(e);
}
function fmtSpan(dx, hasTime) {
  if (!hasTime) return fmtCountOf(Math.round(dx), "event");
  return fmtDuration(dx);
}
function hex(n) { return "0x" + Math.round(n).toString(16); }
// A word for a POSIX shell: quoted unless it is made of safe characters only.
function shellWord(w) { return /^[\w@%+=:,.\/-]+$/.test(w) ? w : "'" + String(w).replace(/'/g, "'\\''") + "'"; }
