#!/usr/bin/env node
// Opens `memsnap report` pages of fixtures and corpus files in headless Chromium (Debian's, driven by
// playwright-core, which downloads no browser) and checks them the way a user would look at them,
// by reading the rendered DOM and the figures the page exports (window.__memsnap):
//   - no console error, the script finished;
//   - no negative value and nothing drawn outside the plot area, on every timeline;
//   - zooming into the peak step with wheel and drag events redraws from finer data, and there
//     the bands and the grey band add up to the live curve, which is the peak;
//   - hovering the largest band at the peak shows its site's label first (never an allocator
//     frame), its category (and the rule that decided it) and size, and the user's frames before the rest; a click keeps them;
//   - the allocator state at the peak matches `memsnap frag --at peak --json`;
//   - the diff page's deltas match `memsnap diff --at peak --json`;
//   - the view survives a reload through the URL hash, follows a resize, and resets with a key;
//   - every figure the page shows is the CLI's: the peaks and their moments, the allocations (the
//     trace's mallocs), ghost and pre-trace blocks (`summary --json`), the live and reserved curves
//     column by column (`timeline --csv`), fragmentation as `frag` measures it;
//   - "Memory by kind" is never negative and never above the live curve, on an inconsistent trace too;
//   - every section says what it is (data-section), and the words read right: no "1 blocks", no
//     "-0" on an axis, sizes written one way, no empty kind listed, the peak line not hidden.
//
// Usage: node check_report.mjs MEMSNAP SOURCE_DIR [--keep DIR] [--corpus DIR]
// Without --corpus it checks pages of the project's fixtures; with it, pages of corpus files only,
// and it exits 77 when that folder is absent (1 when MEMSNAP_REQUIRE_CORPUS=1, as CI sets).
// Exits 77 (ctest SKIP_RETURN_CODE) when Chromium is absent (MEMSNAP_CHROMIUM overrides
// /usr/bin/chromium). With --keep DIR the pages are left in DIR.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const SKIP = 77;
const [memsnap, sourceDir] = process.argv.slice(2);
const keepAt = process.argv.indexOf("--keep");
const keep = keepAt > 0 ? process.argv[keepAt + 1] : null;
const corpusAt = process.argv.indexOf("--corpus");
const corpus = corpusAt > 0 ? process.argv[corpusAt + 1] : null;
const corpusFiles = corpus && fs.existsSync(corpus)
  ? fs.readdirSync(corpus).filter((f) => f.endsWith(".pickle")).map((f) => path.join(corpus, f))
    .sort((p, q) => fs.statSync(q).size - fs.statSync(p).size || (p < q ? -1 : 1))
  : [];
if (corpus && !corpusFiles.length) {
  if (process.env.MEMSNAP_REQUIRE_CORPUS === "1") {
    console.log(`FAIL: the corpus ${corpus} is absent and MEMSNAP_REQUIRE_CORPUS=1`);
    process.exit(1);
  }
  console.log(`skipped: the corpus ${corpus} is absent`);
  process.exit(SKIP);
}
const browserPath = process.env.MEMSNAP_CHROMIUM || "/usr/bin/chromium";
if (!fs.existsSync(browserPath)) {
  console.log(`skipped: ${browserPath} not found (install Debian's chromium package, e.g. ` +
    "MEMSNAP_SETUP_BROWSER=1 scripts/setup.sh)");
  process.exit(SKIP);
}
const driver = path.join(sourceDir, "web", "node_modules", "playwright-core", "index.mjs");
if (!fs.existsSync(driver)) {
  console.log(`FAIL: ${driver} is missing: run scripts/setup.sh (npm ci in web/)`);
  process.exit(1);
}
const { chromium } = await import(pathToFileURL(driver).href);

const tmp = keep || fs.mkdtempSync(path.join(os.tmpdir(), "memsnap-browser-"));
fs.mkdirSync(tmp, { recursive: true });
const failures = [];
const fail = (name, what) => failures.push(`${name}: ${what}`);

function run(args) {
  return execFileSync(memsnap, ["-q", ...args], { encoding: "utf8", maxBuffer: 1 << 30 });
}
function report(name, args) {
  const html = path.join(tmp, `${name}.html`);
  run(["report", ...args, "-o", html]);
  return html;
}

// A trace the final state cannot explain, made the way large test traces are made: the trace
// repeated K times, each copy moved to its own addresses and later in time. Copies' allocations
// are never freed at addresses the final state knows, and their frees of blocks allocated before
// the trace are of blocks never allocated: the curve, added up as recorded, goes negative.
function amplify(input, k, output) {
  const json = path.join(tmp, "amplify-in.json");
  run(["convert", input, json]);
  const d = JSON.parse(fs.readFileSync(json, "utf8"));
  d.device_traces = d.device_traces.map((t) => {
    if (!t || !t.length) return t;
    const times = t.map((e) => e.time_us || 0);
    const span = Math.max(...times) - Math.min(...times) + 1000;
    const out = [];
    for (let c = 0; c < k; c++) {
      for (const e of t) {
        const e2 = Object.assign({}, e);
        if ("addr" in e2 && c) e2.addr = e2.addr + c * 2 ** 40;
        if ("time_us" in e2) e2.time_us = e2.time_us + c * span;
        out.push(e2);
      }
    }
    return out;
  });
  fs.writeFileSync(output, JSON.stringify(d));
  return output;
}

const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox", "--disable-gpu"] });

async function open(name, html, width = 1400) {
  const page = await browser.newPage({ viewport: { width, height: 1000 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(html.startsWith("file:") ? html : pathToFileURL(html).href);
  await page.waitForFunction(() => document.body.dataset.rendered || document.body.dataset.jsError, null, { timeout: 60000 });
  const jsError = await page.evaluate(() => document.body.dataset.jsError || null);
  if (jsError) fail(name, `JavaScript error: ${jsError}`);
  page.memsnapErrors = errors;
  return page;
}

function checkConsole(name, page) {
  for (const e of page.memsnapErrors) fail(name, `console error: ${e}`);
}

// No negative value, nothing outside the plot, and the y axis above every value in the view.
async function checkTimelines(name, page) {
  const figs = await page.evaluate(() => __memsnap.timelines.map((t) => {
    const f = t.figures(), c = t.cols;
    let min = Infinity, max = 0;
    for (let i = 0; i < c.x.length; i++) {
      const right = t.colRight(i);
      if (right < t.a || c.x[i] > t.b) continue;
      min = Math.min(min, c.min[i], c.res[i], t.rest[i]);
      max = Math.max(max, c.max[i], c.res[i]);
    }
    return Object.assign(f, { min, max });
  }));
  figs.forEach((f, i) => {
    if (f.negative) fail(name, `timeline ${i}: ${f.negative} columns with a negative value`);
    if (f.min < 0) fail(name, `timeline ${i}: a value of ${f.min} is drawn`);
    if (f.outside) fail(name, `timeline ${i}: ${f.outside} shapes drawn outside the plot area`);
    if (f.max > f.y_top) fail(name, `timeline ${i}: ${f.max} drawn above the axis top ${f.y_top}`);
  });
  return figs;
}

async function chartBox(page, index) {
  return page.evaluate((i) => {
    const t = __memsnap.timelines[i], r = t.u.over.getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };
  }, index);
}

// Scrolls the chart into view and returns the page x of raw x on it.
async function pixelOf(page, index, x) {
  await page.evaluate((i) => __memsnap.timelines[i].host.scrollIntoView({ block: "center" }), index);
  return page.evaluate(([i, xv]) => {
    const t = __memsnap.timelines[i], r = t.u.over.getBoundingClientRect();
    // Inside the plot, where the pointer's events go (a peak at the trace's last event is on its edge).
    return r.left + Math.max(2, Math.min(r.width - 2, t.u.valToPos(t.map.fwd(xv), "x")));
  }, [index, x]);
}

// "Memory by kind" follows the zoom with finer samples (issue 36 §2): zoomed in, it draws the
// timeline's finer tiles, never a negative value, and never above the live curve drawn over the
// same stretch.
async function checkZoomedKinds(name, page, index, dev) {
  const got = await page.evaluate((i) => {
    const t = __memsnap.timelines[i];
    const c = (__memsnap.categories || []).find((q) => q.device === t.dev.device);
    if (!c || !c.now) return null;
    const now = c.now(), cols = t.cols;
    let over = 0, first = null, shown = 0;
    for (let k = 0; k < now.xs.length; k++) {
      const lo = now.xs[k], hi = k + 1 < now.xs.length ? now.xs[k + 1] : t.span;
      if (hi <= t.a || lo >= t.b) continue;
      shown++;
      let live = 0;
      for (let j = 0; j < cols.x.length; j++) {
        if (t.colRight(j) > lo && cols.x[j] < hi) live = Math.max(live, cols.max[j]);
      }
      if (now.totals[k] > live) { over++; if (!first) first = [lo, now.totals[k], live]; }
    }
    return { level: now.level, whole: c.xs.length, shown, over, first, negative: now.negative, timeline_level: cols.level };
  }, index);
  if (!got) {
    const hasKinds = await page.evaluate((i) => (__memsnap.categories || []).some((q) => q.device === __memsnap.timelines[i].dev.device), index);
    if (hasKinds) fail(name, `"Memory by kind" exports nothing of what it draws zoomed in`);
    return;
  }
  if (dev.levels > 1 && got.timeline_level > 0 && got.level === 0) {
    fail(name, `zoomed in (timeline level ${got.timeline_level}), "Memory by kind" still draws the whole-trace samples`);
  }
  if (got.negative) fail(name, `zoomed in, ${got.negative} negative values of a kind of memory`);
  if (got.over) fail(name, `zoomed in, kinds of memory above the live curve in ${got.over} of ${got.shown} samples (first ${got.first})`);
}

// Zooms into the peak with the mouse wheel, then with a drag across it, and checks the columns
// there: redrawn from finer data, bands + grey band == live == the peak.
async function zoomIntoPeak(name, page, index) {
  const dev = await page.evaluate((i) => __memsnap.timelines[i].dev, index);
  if (!dev.peak) return;
  // From the whole trace (devices share one zoom: another device's may have moved this one).
  const before = await page.evaluate((i) => { __memsnap.timelines[i].reset(); return __memsnap.timelines[i].figures(); }, index);
  let box = await chartBox(page, index);
  for (let k = 0; k < 5; k++) {
    const px = await pixelOf(page, index, dev.peak.x);
    box = await chartBox(page, index);
    await page.mouse.move(px, box.top + box.height / 2);
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(30);
  }
  const wheeled = await page.evaluate((i) => __memsnap.timelines[i].figures(), index);
  if (!(wheeled.view[1] - wheeled.view[0] < (before.view[1] - before.view[0]) / 4)) {
    fail(name, `the wheel did not zoom in (view ${before.view} -> ${wheeled.view})`);
  }
  // A drag from a bit left of the peak to a bit right of it zooms to that range.
  const px = await pixelOf(page, index, dev.peak.x);
  box = await chartBox(page, index);
  const y = box.top + box.height / 2;
  await page.mouse.move(Math.max(box.left + 2, px - 60), y);
  await page.mouse.down();
  await page.mouse.move(px, y, { steps: 4 });
  await page.mouse.move(Math.min(box.left + box.width - 2, px + 60), y, { steps: 4 });
  await page.mouse.up();
  await page.waitForTimeout(50);
  const dragged = await page.evaluate((i) => __memsnap.timelines[i].figures(), index);
  const narrowest = wheeled.view[1] - wheeled.view[0] <= wheeled.min_width * 1.01;
  if (!narrowest && !(dragged.view[1] - dragged.view[0] < wheeled.view[1] - wheeled.view[0])) {
    fail(name, `dragging did not zoom in (view ${wheeled.view} -> ${dragged.view})`);
  }
  if (dragged.bucket_width > before.bucket_width / 4 && dev.levels > 1) {
    fail(name, `zoomed in, the columns are no finer (${before.bucket_width} -> ${dragged.bucket_width})`);
  }
  const col = await page.evaluate(([i, x]) => __memsnap.timelines[i].columnAt(x), [index, dev.peak.x]);
  if (col.live !== dev.peak.bytes) fail(name, `the column at the peak shows ${col.live} live, the peak is ${dev.peak.bytes}`);
  const sum = col.bands.reduce((s, b) => s + b.size, 0);
  if (sum !== col.bands_sum || sum + col.rest !== col.live) {
    fail(name, `at the peak, bands ${sum} + grey ${col.rest} != live ${col.live}`);
  }
  if (col.rest < 0) fail(name, `at the peak the grey band is negative (${col.rest})`);
  if (col.bands.length === 0 || sum < col.live / 2) {
    fail(name, `zoomed into the peak, bands show only ${sum} of ${col.live} live bytes`);
  }
  // Zoomed in, the allocations that build the peak are drawn, not left grey (issue 36 §2): at the
  // finest zoom around the peak, bands hold at least 90% of the live bytes of the window, and the
  // live and reserved lines reach the window's edge.
  const fine = await page.evaluate((i) => {
    const t = __memsnap.timelines[i], x = t.dev.peak.x, w = t.minWidth() * 4;
    t.setView(x - w / 2, x + w / 2);
    const c = t.cols;
    let live = 0, bands = 0;
    for (let k = 0; k < c.x.length; k++) {
      if (t.colRight(k) <= t.a || c.x[k] >= t.b) continue;
      live += c.max[k];
      bands += t.bandSum[k];
    }
    const col = t.columnAt(x);
    return { live, bands, peak_live: col.live, peak_bands: col.bands_sum, last_x: c.x[c.x.length - 1], b: t.b, span: t.span, view: [t.a, t.b] };
  }, index);
  if (fine.bands < 0.9 * fine.live || fine.peak_bands < 0.9 * fine.peak_live) {
    fail(name, `at the finest zoom around the peak (${fine.view}), bands hold ${(100 * fine.bands / fine.live).toFixed(1)}% ` +
      `of the window's live bytes and ${(100 * fine.peak_bands / fine.peak_live).toFixed(1)}% at the peak (want 90%)`);
  }
  if (fine.last_x < fine.b && fine.last_x < fine.span) {
    fail(name, `at the finest zoom the lines stop at ${fine.last_x}, before the window's edge ${fine.b}`);
  }
  await checkZoomedKinds(name, page, index, dev);
  await page.evaluate(([i, v]) => __memsnap.timelines[i].setView(v[0], v[1]), [index, dragged.view]);
  // Band heights stack without gaps from 0.
  const sorted = [...col.bands].sort((p, q) => p.bottom - q.bottom);
  let top = 0;
  for (const b of sorted) {
    if (b.bottom !== top) { fail(name, `bands at the peak do not stack (${b.bottom} != ${top})`); break; }
    top += b.size;
  }
  await checkTimelines(name + " zoomed", page);
  await checkBandStack(name + " zoomed", page, index);
  return dragged;
}

// The page keeps each band's bottom as runs between the columns where the bands under it change
// (issue 36 §4): at every column in view, the bands there are those of the view's tiles alive at
// its sample event, stacked from 0 in allocation order without a gap, and they add up to the
// column's bands total.
async function checkBandStack(name, page, index) {
  const bad = await page.evaluate((i) => {
    const t = __memsnap.timelines[i], c = t.cols, ids = [...c.bandIds].sort((p, q) => p - q);
    let checked = 0;
    for (let k = 0; k < c.x.length; k++) {
      if (t.colRight(k) <= t.a || c.x[k] >= t.b) continue;
      checked++;
      const got = t.columnAt(c.x[k]).bands;
      const want = ids.filter((id) => t.lod.bands[id].alloc <= c.sample[k] && c.sample[k] < t.lod.bands[id].free);
      if (got.map((b) => b.id).join() !== want.join()) return `column ${k}: bands ${got.length}, alive there ${want.length}`;
      let top = 0;
      for (const b of got) {
        if (b.bottom !== top) return `column ${k}: band ${b.id} sits at ${b.bottom}, the bands under it end at ${top}`;
        top += b.size;
      }
      if (top !== t.bandSum[k]) return `column ${k}: the bands add up to ${top}, its bands total is ${t.bandSum[k]}`;
    }
    return checked ? null : "no column in view";
  }, index);
  if (bad) fail(name, `the band stack: ${bad}`);
}

// Hovers the tallest band at the peak (zoomed in): the tooltip leads with the band's site label
// (the page's band site table), then its category and size; the stack shows the user's frames
// first. `want` (a regex): a label some band at the peak must have. A click keeps the label below.
async function checkBandHover(name, page, index, want) {
  const px = await pixelOf(page, index, await page.evaluate((i) => __memsnap.timelines[i].dev.peak.x, index));
  // Mouse events carry whole pixels: pick the pixel first, then the column and band under it.
  const bands = await page.evaluate(([i, peakx]) => {
    const t = __memsnap.timelines[i], r = t.u.over.getBoundingClientRect();
    const pagex = Math.round(Math.min(Math.max(peakx, r.left + 2), r.right - 3));
    const x = t.xAtPointer({ clientX: pagex });
    return t.columnAt(x).bands.map((c) => {
      const b = t.lod.bands[c.id];
      const y0 = t.u.valToPos(c.bottom, "y"), y1 = t.u.valToPos(c.bottom + c.size, "y");
      // The pixel row in the band's middle, and whether the band is there at that row (a row
      // not wholly inside the plot may be the axis's, where the pointer hovers no band).
      const y = Math.round(r.top + (y0 + y1) / 2), v = t.u.posToVal(y - r.top, "y");
      return { id: c.id, x: pagex, y, height: Math.abs(y0 - y1), size: b.size,
        hit: v >= c.bottom && v < c.bottom + c.size && y >= Math.ceil(r.top) && y + 1 <= r.bottom,
        site: t.tables.sites[b.site], category: t.tables.categories[b.cat], rule: t.tables.rules[b.rule] };
    });
  }, [index, px]);
  if (!bands.length) { fail(name, "no band at the peak to hover"); return; }
  if (want && !bands.some((b) => want.test(b.site))) {
    fail(name, `no band at the peak is labelled ${want}: ${bands.map((b) => b.site).join(" | ")}`);
  }
  // The tallest band a whole pixel row falls in (at a peak of many thin bands, any such band).
  const hits = bands.filter((b) => b.hit);
  if (!hits.length) { fail(name, "no band at the peak is a pixel tall"); return; }
  const tallest = hits.reduce((p, q) => (q.height > p.height ? q : p));
  await page.mouse.move(tallest.x - 20, tallest.y - 20);  // a move to where it is fires nothing
  await page.mouse.move(tallest.x, tallest.y);
  await page.waitForTimeout(30);
  const tip = await page.evaluate(() => {
    const t = document.getElementById("tip");
    const head = t.querySelector(".tip-site");
    return { shown: t.style.display !== "none", head: head ? head.textContent : null, text: t.textContent };
  });
  if (!tip.shown) { fail(name, "hovering a band shows no tooltip"); return; }
  const outlined = await page.evaluate((i) => __memsnap.timelines[i].fig.hoveredDrawn, index);
  if (outlined !== tallest.id) fail(name, `the band under the pointer (${tallest.id}) is not outlined (${outlined})`);
  if (tip.head !== tallest.site) fail(name, `the band's tooltip leads with ${JSON.stringify(tip.head)}, its site is ${JSON.stringify(tallest.site)}`);
  if (/CUDACachingAllocator|DeviceCachingAllocator|c10::|at::detail::empty/.test(tip.head || "")) {
    fail(name, `the band's tooltip names an allocator frame: ${tip.head}`);
  }
  if (!tip.text.includes(tallest.category.replace("_", " "))) fail(name, `the band's tooltip does not say its category (${tallest.category})`);
  if (!tallest.rule || !tip.text.includes("rule " + tallest.rule)) fail(name, `the band's tooltip does not say the rule that decided its category (${tallest.rule})`);
  if (!/your code, innermost first|no frame of your code|no stack recorded|every frame filtered/.test(tip.text)) {
    fail(name, `the band's tooltip does not put the user's frames first: ${tip.text.slice(0, 200)}`);
  }
  await page.mouse.click(tallest.x, tallest.y);
  const kept = await page.evaluate(() => { const b = document.querySelector(".details .band-site"); return b ? b.textContent : null; });
  if (kept !== tallest.site) fail(name, `a click on the band keeps ${JSON.stringify(kept)} below the chart, not its site`);
}

// The state view at the peak reserved moment against `memsnap frag --at peak --json`.
async function checkStateAtPeak(name, page, input) {
  const frag = JSON.parse(run(["frag", "--at", "peak", "--json", input]));
  const states = await page.evaluate(() => __memsnap.states.length);
  for (let i = 0; i < states; i++) {
    const device = await page.evaluate((k) => __memsnap.states[k].dev.device, i);
    const button = page.locator(`#state-${device} button[data-moment="peak reserved"]`);
    if (await button.count() === 0) continue;
    await button.click();
    const fig = await page.evaluate((k) => __memsnap.states[k].fig, i);
    const want = frag.devices.find((d) => d.device === device);
    if (!want) { fail(name, `frag --at peak has no device ${device}`); continue; }
    if (fig.event !== want.event_index) fail(name, `state at the peak is after event ${fig.event}, frag says ${want.event_index}`);
    for (const k of ["segments", "free_bytes", "largest_free_bytes", "reserved_bytes", "allocated_bytes", "releasable_bytes", "stranded_bytes"]) {
      if (fig.figures[k] !== want[k]) fail(name, `state at the peak: ${k} ${fig.figures[k]}, frag --at peak says ${want[k]}`);
    }
    // What is drawn is what the figures say: every segment, to scale, free split in two.
    const d = fig.drawn;
    if (d.segments !== want.segments) fail(name, `the map draws ${d.segments} segments of ${want.segments}`);
    if (d.reserved !== want.reserved_bytes) fail(name, `the map draws ${d.reserved} reserved bytes of ${want.reserved_bytes}`);
    if (d.stranded + d.releasable !== want.free_bytes) fail(name, `the map draws ${d.stranded + d.releasable} free bytes of ${want.free_bytes}`);
    if (d.allocated !== want.allocated_bytes) fail(name, `the map draws ${d.allocated} allocated bytes of ${want.allocated_bytes}`);
    if (fig.outside) fail(name, `the segment map draws ${fig.outside} boxes outside its canvas`);
    // Rows do not end ragged: a row's gap is narrower than every box drawn in the rows below it.
    if (!fig.row_ends) fail(name, "the segment map exports no row ends");
    for (let r = 0; fig.row_ends && r + 1 < fig.row_ends.length; r++) {
      const gap = fig.width - fig.row_ends[r], below = Math.min(...fig.row_min_box.slice(r + 1));
      if (gap >= below + 0.01) { fail(name, `segment map row ${r} ends ${gap.toFixed(1)} px short, and a ${below.toFixed(1)} px box is drawn below it`); break; }
    }
    // Rows end evenly: every row but the last, with more than one box, reaches the right edge.
    for (let r = 0; fig.row_ends && r + 1 < fig.row_ends.length; r++) {
      if ((fig.row_boxes ? fig.row_boxes[r] : 2) > 1 && Math.abs(fig.width - fig.row_ends[r]) > 0.5) {
        fail(name, `segment map row ${r} of ${fig.row_ends.length} ends at ${fig.row_ends[r].toFixed(1)} px of ${fig.width}: rows end ragged`);
        break;
      }
    }
    const cursor = await page.evaluate((dev) => {
      const t = __memsnap.timelines.find((c) => c.dev.device === dev);
      return t ? t.cursorX : null;
    }, device);
    if (cursor == null) fail(name, "the timeline shows no cursor for the state's moment");
  }
}

async function checkHashAndKeys(name, page, index, expected) {
  const url = page.url();
  if (!/#.*t\d+=/.test(url)) { fail(name, `the zoomed view is not in the URL (${url})`); return; }
  const again = await open(name + " reloaded", url, 1400);
  const view = await again.evaluate((i) => __memsnap.timelines[i].figures().view, index);
  if (Math.abs(view[0] - expected.view[0]) > 1 || Math.abs(view[1] - expected.view[1]) > 1) {
    fail(name, `the linked view ${view} is not the zoomed one ${expected.view}`);
  }
  // Keyboard: 0 resets the view.
  await again.evaluate((i) => __memsnap.timelines[i].host.focus(), index);
  await again.keyboard.press("0");
  // The whole trace, or the stretch the devices share (a multi-device page).
  const reset = await again.evaluate((i) => { const t = __memsnap.timelines[i]; return [t.figures().view, t.fullView()]; }, index);
  if (reset[0][0] !== reset[1][0] || reset[0][1] !== reset[1][1]) fail(name, `the 0 key did not reset the view (${reset[0]}, not ${reset[1]})`);
  // Resize: the chart follows the window.
  const wide = await again.evaluate((i) => __memsnap.timelines[i].figures().plot.width, index);
  await again.setViewportSize({ width: 800, height: 1000 });
  await again.waitForTimeout(200);
  const narrow = await again.evaluate((i) => __memsnap.timelines[i].figures().plot.width, index);
  if (!(narrow < wide - 200)) fail(name, `the chart did not follow the resize (${wide} -> ${narrow} px)`);
  const overflow = await again.evaluate(() => document.documentElement.scrollWidth);
  if (overflow > 800 + 1) fail(name, `at 800 px the page is ${overflow} px wide`);
  checkConsole(name + " reloaded", again);
  await again.close();
}

async function checkSites(name, page) {
  // The "[N others]" row never sets the scale of the bars.
  const bars = await page.evaluate(() => [...document.querySelectorAll("table.sites")].map((t) =>
    [...t.querySelectorAll("span.bar")].map((b) => [b.classList.contains("others"), parseFloat(b.style.width)])));
  for (const table of bars) {
    const plain = table.filter(([o]) => !o).map(([, w]) => w);
    if (plain.length && Math.max(...plain) < 79) fail(name, "the largest site's bar is not the full width");
  }
}

// Memory by kind: one chart per device with a trace, never negative, adding up at the peak to the
// live curve's peak (when the curve counts every lifetime); site tables name sites, not the
// allocator, and carry a category.
async function checkCategories(name, page) {
  const got = await page.evaluate(() => {
    const D = JSON.parse(document.getElementById("memsnap-data").textContent);
    return { cats: __memsnap.categories || [], devices: D.devices.map((d) => ({ device: d.device, peak: d.peak, counted: d.counted, has: !!d.categories })),
      sites: [...document.querySelectorAll("table.sites td.site")].map((td) => td.querySelector(".frame") ? td.querySelector(".frame").textContent : ""),
      cats_shown: document.querySelectorAll("table.sites .cat").length };
  });
  for (const d of got.devices) {
    if (!d.has) continue;
    const c = got.cats.find((x) => x.device === d.device);
    if (!c) { fail(name, `device ${d.device} has categories but no chart`); continue; }
    if (c.negative) fail(name, `device ${d.device}: ${c.negative} negative category values`);
    // One model: the kinds add up to the curve on every trace, reconciled or not.
    if (d.peak && c.peak_total !== d.peak.bytes) fail(name, `device ${d.device}: categories at the peak add up to ${c.peak_total}, the peak is ${d.peak.bytes}`);
  }
  const machinery = got.sites.filter((s) => /CUDACachingAllocator|DeviceCachingAllocator|c10::|at::detail::empty/.test(s));
  if (machinery.length) fail(name, `site tables name allocator frames: ${machinery.slice(0, 3).join(" | ")}`);
  if (got.sites.length && !got.cats_shown) fail(name, "site tables show no category");
}

// Every section says what it is; the names are the same on every device and page.
async function checkSections(name, page) {
  const got = await page.evaluate(() => {
    const D = JSON.parse(document.getElementById("memsnap-data").textContent);
    return { unnamed: [...document.querySelectorAll("#app > section")].filter((s) => !s.dataset.section).map((s) => s.id),
      names: [...document.querySelectorAll("[data-section]")].map((s) => s.dataset.section),
      want: D.mode === "diff" ? ["timeline", "sites"] : [].concat(
        D.devices.some((d) => d.tiles) ? ["timeline"] : [], D.devices.some((d) => d.categories) ? ["categories"] : [],
        D.devices.some((d) => d.states) ? ["state"] : [], ["sites"], D.replay ? ["replay"] : [],
        D.devices.some((d) => d.tiles) && (D.file.segments > 0 || D.devices.some((d) => d.segment_lifetimes && d.segment_lifetimes.n))
          ? ["segment-timeline"] : []) };
  });
  if (got.unnamed.length) fail(name, `sections without data-section: ${got.unnamed.join(", ")}`);
  for (const w of got.want) if (!got.names.includes(w)) fail(name, `no data-section="${w}"`);
}

// The words, read as a reader would: counts agree with their nouns, sizes are written one way
// (as the CLI writes them: one decimal), the axes never read "-0", the state's title names its
// moment once, no kind of memory is listed at 0 B, and the state cursor leaves the peak line seen.
async function checkWords(name, page) {
  const got = await page.evaluate(() => ({
    text: document.getElementById("app").innerText,
    ticks: __memsnap.timelines.map((t) => t.xTicks ? t.xTicks.ticks.map((v) => t.xTicks.label(v)) : []).flat(),
    repeated: __memsnap.timelines.map((t) => t.xTicks ? t.xTicks.ticks.map((v) => t.xTicks.label(v)) : [])
      .filter((l) => l.some((v, i) => i > 0 && v === l[i - 1])).map((l) => l.join(" ")),
    titles: [...document.querySelectorAll("h3.moment")].map((e) => e.textContent),
    zeroKinds: [...document.querySelectorAll("table.cats tbody tr")].filter((r) => /(^|\s)0\u00a0B/.test(r.textContent)).length,
    hidden: __memsnap.timelines.filter((t) => {
      if (!t.dev.peak || t.cursorX == null || !t.cursorEl || t.cursorEl.style.display === "none") return false;
      return Math.abs(parseFloat(t.cursorEl.style.left) - t.u.valToPos(t.map.fwd(t.dev.peak.x), "x")) < 1.5;
    }).length,
  }));
  const junk = got.text.match(/(^|\s)(null|undefined|NaN|\[object Object\])(\s|$)/);
  if (junk) fail(name, `the page reads "${junk[2]}"`);
  const plural = got.text.match(/(^|[^\d.,])1[\s\u00a0](blocks|segments|allocations|events|sites|trace events|small segments)\b/);
  if (plural) fail(name, `the page reads "${plural[0].trim()}"`);
  const sizes = got.text.match(/\d+(\.\d+)?[\s\u00a0](KiB|MiB|GiB|TiB|PiB)\b/g) || [];
  const odd = sizes.filter((t) => !/^\d+\.\d[\s\u00a0]/.test(t));
  if (odd.length) fail(name, `sizes written another way than the CLI's one decimal: ${[...new Set(odd)].slice(0, 5).join(", ")}`);
  // Times as the CLI writes them (FormatDuration): whole us, one decimal of a ms, three of a s.
  const times = got.text.match(/[+-]?\d+(\.\d+)?[\s\u00a0](us|\u00b5s|ms|s)(?![\w\u00b5])/g) || [];
  const oddTimes = times.filter((t) => !/^[+-]?(\d+[\s\u00a0]us|\d+\.\d[\s\u00a0]ms|\d+\.\d{3}[\s\u00a0]s)$/.test(t));
  if (oddTimes.length) fail(name, `times written another way than the CLI's: ${[...new Set(oddTimes)].slice(0, 5).join(", ")}`);
  const minus = got.ticks.filter((l) => /^-0(\D|$)/.test(l));
  if (minus.length) fail(name, `an axis reads ${minus[0]}`);
  if (got.repeated.length) fail(name, `an axis repeats a label: ${got.repeated[0]}`);
  for (const t of got.titles) {
    const m = /event ([\d,]+) \(event \1\)/.exec(t);
    if (m) fail(name, `the state's title says ${m[0]}`);
  }
  if (got.zeroKinds) fail(name, `${got.zeroKinds} kinds of memory listed at 0 B at the peak`);
  if (got.hidden) fail(name, `the state cursor hides the peak line on ${got.hidden} timelines`);
}

// The page's figures against the CLI's, every device: `summary --json` (peaks and their moments,
// mallocs, ghosts, blocks only freed in the trace) and `timeline --csv` (the live and reserved
// curves: each drawn column of the whole trace is the highest value of the events in it, or the
// value carried from the last event before it). Only for traces the final state explains, where
// the page draws the timeline's own curve.
async function checkFigures(name, page, input) {
  const summary = JSON.parse(run(["summary", "--json", input]));
  const csv = run(["timeline", "--csv", input]).trim().split("\n");
  const head = csv[0].split(",");
  const col = (k) => head.indexOf(k);
  const rows = new Map();
  for (const line of csv.slice(1)) {
    const f = line.split(",");
    const d = Number(f[col("device")]);
    if (!rows.has(d)) rows.set(d, []);
    rows.get(d).push({ event: Number(f[col("event")]), t: Number(f[col("time_rel_us")]), live: Number(f[col("live_requested")]), res: Number(f[col("reserved")]) });
  }
  const devs = await page.evaluate(() => {
    const D = JSON.parse(document.getElementById("memsnap-data").textContent);
    return D.devices.map((d) => {
      const t = __memsnap.timelines.find((c) => c.dev.device === d.device);
      if (t) t.reset();
      const cards = Object.fromEntries([...document.querySelectorAll(`#timeline-${d.device} > .cards .card`)].map((c) =>
        [c.querySelector(".k").textContent, c.querySelector(".v").textContent]));
      return { device: d.device, peak: d.peak, counted: d.counted, mallocs: d.mallocs, has_time: d.has_time, cards, tiles_shown: !!d.tiles,
        // Plain arrays: the columns are typed arrays, which page.evaluate would return as objects.
        cols: t ? { x: Array.from(t.cols.x), max: Array.from(t.cols.max), res: Array.from(t.cols.res), span: t.span, w: t.cols.w } : null };
    });
  });
  for (const d of devs) {
    const want = summary.devices.find((s) => s.device === d.device);
    if (!want) { fail(name, `summary has no device ${d.device}`); continue; }
    const tag = `${name} device ${d.device}`;
    const mallocs = (want.actions && want.actions.alloc) || 0;
    if (d.mallocs !== mallocs) fail(tag, `${d.mallocs} allocations on the page, the trace has ${mallocs} mallocs`);
    if (d.cards.allocations !== undefined && d.cards.allocations !== fmtCount(mallocs)) {
      fail(tag, `the allocations card reads ${d.cards.allocations}, the trace has ${mallocs} mallocs`);
    }
    // (The page's ghost bytes are requested bytes, as its curve counts them; summary's are the
    // blocks' sizes.)
    if (d.tiles_shown && d.counted.ghosts !== want.ghost_blocks) {
      fail(tag, `${d.counted.ghosts} ghosts, summary says ${want.ghost_blocks}`);
    }
    if (d.counted.frees_without_alloc !== want.frees_without_alloc) {
      fail(tag, `${d.counted.frees_without_alloc} frees without alloc, summary says ${want.frees_without_alloc}`);
    }
    if (!d.peak || !want.peaks) continue;
    const p = want.peaks;
    if (d.peak.bytes !== p.live_bytes || d.peak.event !== p.live_event) {
      fail(tag, `peak live ${d.peak.bytes} after event ${d.peak.event}, summary says ${p.live_bytes} after ${p.live_event}`);
    }
    if (d.peak.reserved_bytes !== p.reserved_bytes || d.peak.reserved_event !== p.reserved_event) {
      fail(tag, `peak reserved ${d.peak.reserved_bytes} after event ${d.peak.reserved_event}, summary says ${p.reserved_bytes} after ${p.reserved_event}`);
    }
    if (d.has_time && d.peak.x !== p.live_time_rel_us) fail(tag, `the peak is drawn at ${d.peak.x} us, summary says +${p.live_time_rel_us} us`);
    for (const [k, v] of [["peak live", p.live_bytes], ["peak reserved", p.reserved_bytes]]) {
      if (d.cards[k] !== fmtBytes(v)) fail(tag, `the ${k} card reads ${d.cards[k]}, summary's figure is ${fmtBytes(v)}`);
    }
    // The curves, column by column, against timeline --csv.
    const ev = rows.get(d.device) || [];
    if (!d.cols || !ev.length) continue;
    if (!Array.isArray(d.cols.x) || !d.cols.x.length) { fail(tag, "the timeline exports no columns to check"); continue; }
    // The last bucket holds the trace's end (x == span).
    const xOf = (e, i) => Math.min(d.has_time ? e.t : i, d.cols.span - d.cols.w / 2);
    let j = 0, bad = 0, first = null;
    let lastLive = d.counted.end_live_counted, lastRes = null;  // before event 0: unknown here
    for (let k = 0; k < d.cols.x.length; k++) {
      const lo = d.cols.x[k], hi = k + 1 < d.cols.x.length ? d.cols.x[k + 1] : d.cols.span + 1;
      let live = -Infinity, res = -Infinity, any = false;
      while (j < ev.length && xOf(ev[j], j) < hi) {
        if (xOf(ev[j], j) >= lo) { live = Math.max(live, ev[j].live); res = Math.max(res, ev[j].res); any = true; }
        lastLive = ev[j].live; lastRes = ev[j].res;
        j++;
      }
      if (!any) { if (lastRes == null) continue; live = lastLive; res = lastRes; }
      // The first column starts before event 0: reserved then is in the CSV only as summary's
      // peak when the peak is there ("reserved_event": -1).
      if (k === 0 && p.reserved_event === -1) res = Math.max(res, p.reserved_bytes);
      if (live !== d.cols.max[k] || res !== d.cols.res[k]) {
        bad++;
        if (!first) first = `at x ${lo}: live ${d.cols.max[k]} reserved ${d.cols.res[k]}, timeline --csv ${live} and ${res}`;
      }
    }
    if (bad) fail(tag, `${bad} of ${d.cols.x.length} columns differ from timeline --csv (first ${first})`);
  }
  // The peak's moment reads as summary prints it ("peak live  19.6 MiB at +40 us (event:5)").
  const peakAt = new Map();
  let dev = null;
  for (const line of run(["summary", input]).split("\n")) {
    const d = /^device (\d+)/.exec(line);
    if (d) dev = Number(d[1]);
    const m = /^\s+peak live\s+\S+ \S+ (at [+-]\S+ \S+ \(event:|before the first event)/.exec(line);
    if (m && dev != null) peakAt.set(dev, m[1].replace(/ \(event:$/, ""));
  }
  const peakCards = await page.evaluate(() => [...document.querySelectorAll("section[id^=timeline-] > .cards .card")]
    .filter((c) => c.querySelector(".k").textContent === "peak live")
    .map((c) => ({ device: Number(c.closest("section").id.split("-")[1]), text: c.innerText.replace(/\u00a0/g, " ").replace(/\s+/g, " ") })));
  for (const c of peakCards) {
    const want = peakAt.get(c.device);
    if (want && !c.text.includes(want)) fail(`${name} device ${c.device}`, `the peak card reads "${c.text}", summary says ${want}`);
  }
  // Fragmentation means one thing: the state's card at the reserved peak is frag's stranded share.
  const frag = JSON.parse(run(["frag", "--at", "peak", "--json", input]));
  for (const a of frag.answers || []) {
    const button = page.locator(`#state-${a.device} button[data-moment="peak reserved"]`);
    if (await button.count() === 0) continue;
    await button.click();
    const shown = await page.evaluate((dev) => {
      const c = [...document.querySelectorAll(`#state-${dev} .card`)].find((e) => e.querySelector(".k").textContent === "fragmentation");
      return c ? c.querySelector(".v").textContent : null;
    }, a.device);
    if (shown == null || Math.abs(parseFloat(shown) - 100 * a.stranded_share) > 0.051) {
      fail(`${name} device ${a.device}`, `the state card's fragmentation reads ${shown}, frag's stranded share is ${(100 * a.stranded_share).toFixed(2)}%`);
    }
  }
}

// The page's own ways of writing a size and a count (web/src/format.js), for the checks above.
function fmtBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = Math.abs(n), i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (n < 0 ? "-" : "") + (i === 0 ? v.toFixed(0) : v.toFixed(1)) + "\u00a0" + units[i];
}
function fmtCount(n) { return Number(n).toLocaleString("en-US"); }

// Memory by kind never goes negative and never rises above the live curve of its timeline.
async function checkKindsUnderCurve(name, page) {
  const got = await page.evaluate(() => (__memsnap.categories || []).map((c) => {
    const t = __memsnap.timelines.find((q) => q.dev.device === c.device);
    if (!t || !c.xs) return { device: c.device, missing: true };
    t.reset();
    let over = 0, first = null;
    // Each sample holds until the next one: no higher than the curve anywhere in between (the
    // state a column carries on over columns without events included).
    const cols = t.cols;
    let j = 0;
    c.xs.forEach((x, i) => {
      const hi = i + 1 < c.xs.length ? c.xs[i + 1] : t.span;
      let live = t.columnAt(x).live;
      while (j < cols.x.length && t.colRight(j) <= x) j++;
      for (let q = j; q < cols.x.length && cols.x[q] < hi; q++) live = Math.min(live, cols.max[q]);
      if (c.totals[i] > live) { over++; if (!first) first = [x, c.totals[i], live]; }
    });
    return { device: c.device, negative: c.negative, over, first, peak_total: c.peak_total, peak: t.dev.peak && t.dev.peak.bytes };
  }));
  for (const c of got) {
    if (c.missing) { fail(name, `device ${c.device}: the kinds of memory chart exports no columns to check`); continue; }
    if (c.negative) fail(name, `device ${c.device}: ${c.negative} negative values of a kind of memory`);
    if (c.over) fail(name, `device ${c.device}: kinds of memory above the live curve in ${c.over} columns (first at ${c.first})`);
    if (c.peak_total < 0 || (c.peak != null && c.peak_total > c.peak)) fail(name, `device ${c.device}: kinds at the peak add up to ${c.peak_total}, the peak is ${c.peak}`);
  }
}

// The cached segment timeline (issue 36 §1, §3): segments drawn, linked to the timeline's zoom,
// and stacked exactly as high as the reserved curve after every event (`timeline --csv`): never
// above it, equal where the trace explains it (an expandable segment's unmap that starts inside a
// mapping once stacked a device of the corpus 4 GiB above its 78.5 GiB card). Without `input`,
// against the timeline's columns only.
async function checkSegmentTimeline(name, page, input = null) {
  const got = await page.evaluate(() => (__memsnap.segmentTimelines || []).map((s) => {
    const t = s.timeline, before = s.figures();
    const x = t.dev.peak ? t.dev.peak.x : t.span / 2, w = t.span / 50;
    t.setView(x - w / 2, x + w / 2);
    const after = s.figures(), view = [t.a, t.b];
    t.reset();
    const warned = [...s.host.parentElement.querySelectorAll(".note.warn")].some((n) => /do not add up/.test(n.textContent));
    const heights = [s.heightAt(-1)];
    for (let e = 0; e < t.dev.num_events; e++) heights.push(s.heightAt(e));
    return { device: s.dev.device, before, after, view, unexplained: s.unexplained, warned, heights };
  }));
  const want = await page.evaluate(() => JSON.parse(document.getElementById("memsnap-data").textContent).devices
    .filter((d) => d.tiles && d.segment_lifetimes && d.segment_lifetimes.n).length);
  if (got.length !== want) fail(name, `${got.length} cached segment timelines for ${want} devices with segments`);
  const reserved = new Map();  // device -> reserved bytes after each event, from the CLI
  if (input) {
    const csv = run(["timeline", "--csv", input]).trim().split("\n");
    const head = csv[0].split(","), dc = head.indexOf("device"), ec = head.indexOf("event"), rc = head.indexOf("reserved");
    for (const line of csv.slice(1)) {
      const f = line.split(",");
      const d = Number(f[dc]);
      if (!reserved.has(d)) reserved.set(d, []);
      reserved.get(d)[Number(f[ec])] = Number(f[rc]);
    }
  }
  for (const g of got) {
    if (!g.before.drawn) fail(name, `device ${g.device}: the cached segment timeline draws no segment`);
    // Segments add up to the reserved curve, unless the trace releases more than it can have
    // held; then the page says so.
    if (g.unexplained && !g.warned) fail(name, `device ${g.device}: segment events ${g.unexplained} B off the final state, and no note says so`);
    if (g.before.over_reserved || g.after.over_reserved) {
      fail(name, `device ${g.device}: segments stacked above the reserved curve in ${g.before.over_reserved + g.after.over_reserved} columns`);
    }
    const res = reserved.get(g.device);
    if (res) {
      let over = 0, off = 0, first = null;
      for (let e = 0; e < res.length; e++) {
        if (res[e] === undefined) continue;
        const h = g.heights[e + 1];
        if (h > res[e]) over++;
        if (h !== res[e] - (g.unexplained || 0)) off++;
        if ((h > res[e] || h !== res[e] - (g.unexplained || 0)) && !first) first = `after event ${e}: segments ${h} B, reserved ${res[e]} B`;
      }
      if (over && !g.unexplained) fail(name, `device ${g.device}: segments stacked above timeline --csv's reserved bytes after ${over} events (first ${first})`);
      if (off) fail(name, `device ${g.device}: segments differ from timeline --csv's reserved bytes after ${off} events (first ${first})`);
    }
    if (g.after.view[0] !== g.view[0] || g.after.view[1] !== g.view[1]) {
      fail(name, `device ${g.device}: the cached segment timeline does not follow the zoom (${g.after.view} vs ${g.view})`);
    }
  }
}

// The state before the first event reads as the CLI names it ("before the first event", as `frag`
// and `summary` say), never "-1", which the CLI's event:-1 reads as the last event; and "go to
// event" takes -1 as the CLI does: the last event.
async function checkStateStart(name, page) {
  const got = await page.evaluate(() => __memsnap.states.filter((v) => v.events > 0 && v.gotoInput).map((v) => {
    v.showEvent(-1, false);
    const sec = v.host.closest("section"), bar = sec.querySelector(".controls");
    const shown = [...bar.querySelectorAll("input:not([type=range])")].map((i) => i.value);
    const text = bar.innerText;
    v.gotoInput.value = "-1";
    v.gotoInput.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    const lastEvent = v.view.event;
    return { device: v.dev.device, shown, text, lastEvent, events: v.events };
  }));
  for (const g of got) {
    const tag = `${name} device ${g.device}`;
    if (g.shown.includes("-1") || /(^|\s)-1(\s|$)/.test(g.text)) fail(tag, `before the first event the state's controls read -1`);
    if (!/before the first event/.test(g.text)) fail(tag, `before the first event the state's controls do not say so ("${g.text.replace(/\s+/g, " ")}")`);
    if (g.lastEvent !== g.events - 1) fail(tag, `"go to event" -1 shows event ${g.lastEvent}, the CLI's event:-1 is event ${g.events - 1}`);
  }
}

// The cached segment timeline carries the timeline's x axis: the same ticks, labelled the same,
// over the whole trace and zoomed in.
async function checkSegmentAxis(name, page) {
  for (const zoom of [false, true]) {
    await page.evaluate((z) => {
      for (const s of __memsnap.segmentTimelines || []) {
        const t = s.timeline;
        if (z) { const x = t.dev.peak ? t.dev.peak.x : t.span / 2; t.setView(x - t.span / 40, x + t.span / 40); } else t.reset();
      }
    }, zoom);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const got = await page.evaluate(() => (__memsnap.segmentTimelines || []).map((s) => {
      const t = s.timeline;
      return { device: s.dev.device, mine: s.figures().x_ticks || null, theirs: t.xTicks ? t.xTicks.ticks.map((v) => t.xTicks.label(v)) : [] };
    }));
    for (const g of got) {
      const tag = `${name} device ${g.device}${zoom ? " zoomed" : ""}`;
      if (!g.mine || !g.mine.length) fail(tag, "the cached segment timeline has no time axis");
      else if (g.mine.join("|") !== g.theirs.join("|")) fail(tag, `the cached segment timeline's axis reads ${g.mine.join(" ")}, the timeline's ${g.theirs.join(" ")}`);
    }
  }
  await page.evaluate(() => { for (const t of __memsnap.timelines) t.reset(); });
}

// The allocator state event by event (issue 36 §3): around the peak the arrow keys and the
// previous/next buttons step one event, and the state changes by exactly that event's block (an
// alloc adds it with the requested bytes, free_requested makes it pending, free_completed removes
// it, a segment event leaves the blocks alone); the list of events around the cursor follows.
async function checkStateSteps(name, page) {
  const got = await page.evaluate(() => __memsnap.states.map((v) => {
    const active = (view) => {
      const out = new Map();
      for (const s of view.segs) {
        let off = 0;
        for (const p of s.spans) {
          if (p.kind <= 1) out.set(s.addr + off, { kind: p.kind, size: p.size, requested: p.requested });
          off += p.size;
        }
      }
      return out;
    };
    const start = v.moments.findIndex((m) => (m.labels || []).includes("peak live"));
    if (start < 0) return { device: v.dev.device, none: true };
    v.show(start, true);
    const sec = v.host.closest("section");
    const steps = [], problems = [];
    const press = (key) => sec.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
    for (const [how, d] of [["key", 1], ["key", 1], ["button", 1], ["key", -1], ["button", -1], ["button", -1], ["key", -1], ["key", -1]]) {
      const before = v.view, e0 = before.event;
      if (how === "key") press(d > 0 ? "ArrowRight" : "ArrowLeft");
      else if (sec.querySelector(`button[data-step="${d}"]`)) sec.querySelector(`button[data-step="${d}"]`).click();
      else { problems.push(`no button steps ${d > 0 ? "forward" : "back"} one event`); continue; }
      const after = v.view, e1 = after.event;
      if (e1 === e0) { problems.push(`${how} ${d} at event ${e0} did not move`); continue; }
      if (Math.abs(e1 - e0) !== 1) { steps.push({ skipped: e1 - e0 }); continue; }
      // The later state's event is the one that made the difference.
      const [lo, hi] = e1 > e0 ? [before, after] : [after, before];
      const w = hi.what, A = active(lo), B = active(hi);
      const changed = [];
      for (const [a, x] of B) { const y = A.get(a); if (!y || y.kind !== x.kind || y.size !== x.size) changed.push(["+", a, x, y]); }
      for (const [a, y] of A) if (!B.has(a)) changed.push(["-", a, null, y]);
      const addr = parseInt(w.addr, 16);
      let ok;
      if (w.action === "alloc") ok = changed.length === 1 && changed[0][0] === "+" && changed[0][1] === addr && !changed[0][3] && changed[0][2].kind === 0 && changed[0][2].requested === w.size;
      else if (w.action === "free_requested") ok = changed.length === 1 && changed[0][1] === addr && changed[0][2] && changed[0][2].kind === 1 && changed[0][3].kind === 0;
      else if (w.action === "free_completed") ok = changed.length === 1 && changed[0][0] === "-" && changed[0][1] === addr;
      else ok = changed.length === 0;
      if (!ok) problems.push(`event ${hi.event} (${w.action} ${w.size} at ${w.addr}) changed ${changed.length} blocks: ${JSON.stringify(changed.map((c) => [c[0], c[1].toString(16)]))}`);
      const current = sec.querySelector(".events .event.current");
      if (!current || Number(current.dataset.event) !== e1) problems.push(`the list of events does not mark event ${e1}`);
      else if ((after.what || { stack: -1 }).stack >= 0 && !current.querySelector("details pre")) problems.push(`event ${e1} lists no raw stack`);
      steps.push({ event: e1, action: w.action });
    }
    return { device: v.dev.device, steps, problems };
  }));
  for (const g of got) {
    if (g.none) continue;
    for (const p of g.problems) fail(name, `device ${g.device}: stepping the allocator state: ${p}`);
    if (!g.steps.some((s) => s.action)) fail(name, `device ${g.device}: no step of one event from the peak (${JSON.stringify(g.steps)})`);
  }
}

// The allocator state at any event exactly (issue 36 §3): typed into "go to event", an event that
// is none of the stored moments shows the blocks `memsnap blocks --at event:N` lists (address and
// requested bytes; the sizes are the allocator's blocks, frag's) and `frag --at event:N`'s figures;
// stepping on from there stays exact. Without the events' changes on the page (`exact` false: a
// trace too long), the page gives the command that answers it.
async function checkStateAtEvent(name, page, input, exact = true) {
  const views = await page.evaluate(() => __memsnap.states.map((v) => ({ device: v.dev.device,
    events: v.moments[v.moments.length - 1].event + 1, stored: v.moments.map((m) => m.event) })));
  for (const [k, g] of views.entries()) {
    if (g.events < 8) continue;
    const stored = new Set(g.stored);
    const wanted = [];
    for (const share of [0.37, 0.61, 0.83]) {
      let e = Math.floor(g.events * share);
      while (stored.has(e) && e > 0) e--;
      if (!stored.has(e)) wanted.push(e);
    }
    if (!wanted.length) continue;  // a short trace: every event is a stored moment
    for (const e of wanted) {
      const sec = page.locator(`#state-${g.device}`);
      const box = sec.locator("input.goto");
      if (await box.count() === 0) { fail(name, `device ${g.device}: no "go to event" box`); break; }
      await box.fill(String(e));
      await box.press("Enter");
      const got = await page.evaluate(([i]) => {
        const v = __memsnap.states[i], blocks = [];
        for (const s of v.view.segs) {
          let off = 0;
          for (const p of s.spans) { if (p.kind <= 1) blocks.push([s.addr + off, p.requested, p.size]); off += p.size; }
        }
        const note = v.host.closest("section").querySelector(".note.exact");
        return { event: v.view.event, title: v.title.textContent, figures: v.fig.figures, blocks, note: note ? note.textContent : null };
      }, [k]);
      if (!exact) {
        const want = `memsnap blocks ${input} --at event:${e}`;
        if (!got.note || !got.note.includes(want)) fail(name, `device ${g.device}: event ${e} without the exact state on the page, and no line saying "${want}" (${got.note})`);
        continue;
      }
      if (got.event !== e) { fail(name, `device ${g.device}: going to event ${e} shows event ${got.event}`); continue; }
      if (!got.title.includes(`after event ${e.toLocaleString("en-US")}`)) fail(name, `device ${g.device}: the state title at event ${e} reads "${got.title}"`);
      const cli = JSON.parse(run(["blocks", input, "--at", `event:${e}`, "--device", String(g.device), "--limit", "0", "--json"]));
      const want = new Map(cli.blocks.map((b) => [b.address, b]));
      const shown = new Map(got.blocks.map((b) => [b[0], b]));
      const missing = [...want.keys()].filter((a) => !shown.has(a));
      const extra = [...shown.keys()].filter((a) => !want.has(a));
      const other = [...want.values()].filter((b) => shown.has(b.address) && (shown.get(b.address)[1] !== b.requested_size || shown.get(b.address)[2] < b.size));
      if (missing.length || extra.length || other.length) {
        fail(name, `device ${g.device}: the state after event ${e} shows ${shown.size} blocks, memsnap blocks --at event:${e} lists ${want.size}: ` +
          `${missing.length} missing (${missing.slice(0, 3).map((a) => a.toString(16))}), ${extra.length} not listed (${extra.slice(0, 3).map((a) => a.toString(16))}), ${other.length} of other bytes`);
      }
      const frag = JSON.parse(run(["frag", "--at", `event:${e}`, "--json", input])).devices.find((d) => d.device === g.device);
      for (const key of ["segments", "reserved_bytes", "allocated_bytes", "pending_free_bytes", "releasable_bytes", "stranded_bytes", "largest_free_bytes"]) {
        if (frag && got.figures[key] !== frag[key]) fail(name, `device ${g.device}: the state after event ${e}: ${key} ${got.figures[key]}, frag --at event:${e} says ${frag[key]}`);
      }
    }
  }
}

// The replay chart (issue 36 §3): hovering it reads out each configuration's reserved bytes at the
// cursor (the curve's value there), its zoom is the timeline's both ways, and a curve that is the
// same as another's at every point says so in the legend (else it hides under the other).
async function checkReplay(name, page) {
  if (!(await page.evaluate(() => !!__memsnap.replay))) return;
  await page.locator("[data-section=replay]").scrollIntoViewIfNeeded();
  const box = await page.evaluate(() => { const r = __memsnap.replay.over.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; });
  await page.mouse.move(box[0] + box[2] * 0.6, box[1] + box[3] / 2);
  const hover = await page.evaluate(() => {
    const u = __memsnap.replay, r = u.readout;
    const el = document.querySelector("[data-readout=replay]");
    return { r, text: el ? el.textContent : "",
      want: r ? u.valuesAt(r.x) : null,
      confs: [...document.querySelectorAll("[data-section=replay] .legend-item")].map((e) => e.textContent),
      curves: JSON.parse(document.getElementById("memsnap-data").textContent).replay.runs.filter((q) => q.curve) };
  });
  if (!hover.r) fail(name, "hovering the replay chart reads nothing out");
  else {
    hover.curves.forEach((c, i) => {
      const part = `${c.conf} ${fmtBytes(hover.want[i])}`;
      if (!hover.text.includes(part)) fail(name, `the replay readout "${hover.text}" does not say "${part}"`);
    });
  }
  // Coinciding curves: the legend of each later one names the first.
  hover.curves.forEach((c, i) => {
    const first = hover.curves.findIndex((o) => JSON.stringify(o.curve) === JSON.stringify(c.curve));
    const says = /same as /.test(hover.confs[i] || "");
    if (first < i && !says) fail(name, `the replay curve of ${c.conf} is ${hover.curves[first].conf}'s, and its legend does not say so`);
    if (first === i && says) fail(name, `the replay legend says ${c.conf}'s curve is another's, and it is not`);
  });
  // The timeline's zoom moves the replay chart, and the replay's wheel moves the timeline.
  const linked = await page.evaluate(() => {
    const u = __memsnap.replay, t = __memsnap.timelines.find((c) => c.dev.device === JSON.parse(document.getElementById("memsnap-data").textContent).replay.device);
    if (!t) return null;
    t.setView(t.span * 0.25, t.span * 0.5);
    return { t: [t.a, t.b], r: [u.scales.x.min, u.scales.x.max] };
  });
  if (!linked) { fail(name, "no timeline for the replayed device"); return; }
  const near = (p, q) => Math.abs(p[0] - q[0]) <= 1e-6 * Math.max(1, Math.abs(q[1])) && Math.abs(p[1] - q[1]) <= 1e-6 * Math.max(1, Math.abs(q[1]));
  if (!near(linked.r, linked.t)) fail(name, `zooming the timeline to ${linked.t} leaves the replay chart at ${linked.r}`);
  await page.mouse.move(box[0] + box[2] * 0.5, box[1] + box[3] / 2);
  await page.mouse.wheel(0, -300);
  const back = await page.evaluate(() => {
    const u = __memsnap.replay, t = __memsnap.timelines.find((c) => c.dev.device === JSON.parse(document.getElementById("memsnap-data").textContent).replay.device);
    return { t: [t.a, t.b], r: [u.scales.x.min, u.scales.x.max] };
  });
  if (near(back.r, linked.r)) fail(name, "a wheel notch over the replay chart does not zoom it");
  if (!near(back.t, back.r)) fail(name, `zooming the replay chart to ${back.r} leaves the timeline at ${back.t}`);
  await page.evaluate(() => __memsnap.timelines.forEach((t) => t.reset()));
}

// An OOM chart draws the card's capacity (issue 36 §3): a line inside the plot at `memsnap oom`'s
// usable capacity, on every device with an OOM.
async function checkCapacity(name, page) {
  const got = await page.evaluate(() => __memsnap.timelines.map((t) => {
    t.reset();
    return { device: t.dev.device, ooms: (t.dev.ooms || []).length, want: t.dev.capacity, drawn: t.fig.capacity || null };
  }));
  for (const g of got) {
    if (!g.ooms) continue;
    if (!g.want) { fail(name, `device ${g.device}: an OOM and no capacity on the page`); continue; }
    if (!g.drawn) { fail(name, `device ${g.device}: the OOM chart draws no capacity line`); continue; }
    if (g.drawn.bytes !== g.want.bytes || g.drawn.y < g.drawn.top - 0.5 || g.drawn.y > g.drawn.bottom + 0.5) {
      fail(name, `device ${g.device}: the capacity line ${JSON.stringify(g.drawn)} is not inside the plot at ${g.want.bytes}`);
    }
  }
}

// Training steps and annotation regions over the timeline (issue 36 §3): the steps are those
// `leaks` (and `--at step:N`) finds, each drawn; every annotation region in view is drawn.
async function checkStepsAndAnnotations(name, page, input) {
  const got = await page.evaluate(() => __memsnap.timelines.map((t) => {
    t.reset();
    return { device: t.dev.device, steps: t.fig.steps, annotations: t.fig.annotations,
      starts: null };
  }));
  let leaks = null;
  try { leaks = JSON.parse(run(["leaks", "--json", input])); } catch (e) { leaks = null; }
  const want = leaks && leaks.steps && leaks.steps.steps ? leaks.steps : null;
  let starts = null;
  if (input.endsWith(".json")) {
    const doc = JSON.parse(fs.readFileSync(input, "utf8"));
    starts = (doc.external_annotations || []).filter((a) => a.stage === "START").length;
  }
  for (const g of got) {
    if (!g.steps) { fail(name, `device ${g.device}: the timeline does not say what steps it drew`); continue; }
    if (want && want.device === g.device && want.steps.length > 1) {
      if (g.steps.n !== want.steps.length) fail(name, `device ${g.device}: ${g.steps.n} steps drawn, leaks finds ${want.steps.length}`);
      if (g.steps.drawn !== g.steps.n) fail(name, `device ${g.device}: ${g.steps.drawn} of ${g.steps.n} steps drawn over the whole trace`);
    }
    if (starts != null && got.length === 1) {
      if (g.annotations.n !== starts) fail(name, `device ${g.device}: ${g.annotations.n} annotation regions for ${starts} START entries`);
      if (starts && !g.annotations.drawn) fail(name, `device ${g.device}: no annotation region drawn`);
    }
  }
}

// Devices share one time axis and one zoom (issue 36 §3): every timeline of a multi-device page
// shows the same stretch of time, before and after zooming one of them.
async function checkSharedAxis(name, page) {
  const got = await page.evaluate(() => {
    const ts = __memsnap.timelines.filter((t) => t.dev.has_time);
    const views = () => ts.map((t) => [t.map.fwd(t.a), t.map.fwd(t.b)].map((v) => Math.round(v)));
    ts.forEach((t) => t.reset());
    const whole = views();
    if (ts.length < 2) return { n: ts.length };
    const t = ts[ts.length - 1], x = t.dev.peak ? t.dev.peak.x : t.span / 2, w = Math.max(t.span / 40, 10);
    t.setView(x - w / 2, x + w / 2);
    const zoomed = views();
    ts.forEach((q) => q.reset());
    return { n: ts.length, whole, zoomed };
  });
  if (got.n < 2) return;
  const same = (vs) => vs.every((v) => Math.abs(v[0] - vs[0][0]) <= 1 && Math.abs(v[1] - vs[0][1]) <= 1);
  if (!same(got.whole)) fail(name, `the devices' timelines show different stretches of time: ${JSON.stringify(got.whole)}`);
  if (!same(got.zoomed)) fail(name, `zooming one device leaves the others elsewhere: ${JSON.stringify(got.zoomed)}`);
}

async function checkSinglePage(name, input, extra = [], wantBand = null) {
  const html = report(name, [input, ...extra]);
  const page = await open(name, html);
  await checkSections(name, page);
  await checkWords(name, page);
  await checkTimelines(name, page);
  const count = await page.evaluate(() => __memsnap.timelines.length);
  let zoomed = null;
  for (let i = 0; i < count; i++) {
    const z = await zoomIntoPeak(name, page, i);
    if (z && !zoomed) zoomed = { index: i, fig: z };
  }
  // Devices share one zoom: the last one zoomed moved the first; back to its peak.
  if (zoomed && count > 1) zoomed.fig = await zoomIntoPeak(name, page, zoomed.index);
  if (zoomed) await checkBandHover(name, page, zoomed.index, wantBand);
  await checkStateAtPeak(name, page, input);
  await checkStateSteps(name, page);
  await checkStateAtEvent(name, page, input);
  await checkSites(name, page);
  await checkCategories(name, page);
  checkConsole(name, page);
  if (zoomed) await checkHashAndKeys(name, page, zoomed.index, zoomed.fig);
  // These reset the view: after the zoomed view's link was checked.
  for (let i = 0; i < count; i++) await checkBandsDrawn(name, page, i);
  await checkReplay(name, page);
  await checkKindsUnderCurve(name, page);
  await checkCapacity(name, page);
  await checkStepsAndAnnotations(name, page, input);
  await checkSharedAxis(name, page);
  await checkSegmentTimeline(name, page, input);
  await checkSegmentAxis(name, page);
  await checkStateStart(name, page);
  await checkFigures(name, page, input);
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
  return html;
}

// A page too small to zoom into (a few events): its sections, words and figures.
async function checkPlainPage(name, input) {
  const html = report(name, [input]);
  const page = await open(name, html);
  await checkSections(name, page);
  await checkWords(name, page);
  await checkTimelines(name, page);
  await checkStateAtPeak(name, page, input);
  await checkSegmentAxis(name, page);
  await checkStateStart(name, page);
  await checkFigures(name, page, input);
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
}

async function checkDiffPage(name, a, b) {
  const html = report(name, [a, b]);
  const page = await open(name, html);
  await checkTimelines(name, page);
  const diff = JSON.parse(run(["diff", "--at", "peak", "--json", a, b]));
  const shown = await page.evaluate(() => __memsnap.siteDeltas);
  if (!shown || !shown.length) fail(name, "the diff page shows no site deltas");
  (shown || []).forEach((r, i) => {
    const want = diff.sites[i];
    if (!want || want.key !== r.key || want.delta_bytes !== r.delta || want.before_bytes !== r.before || want.after_bytes !== r.after) {
      fail(name, `site delta ${i}: page ${JSON.stringify(r)}, memsnap diff ${JSON.stringify(want)}`);
    }
  });
  const bars = await page.evaluate(() => document.querySelectorAll(".delta-row .dbar").length);
  if (bars !== (shown || []).length) fail(name, `${bars} delta bars for ${(shown || []).length} sites`);
  // Both timelines share the x axis: zooming one zooms the other; every alignment draws.
  const n = await page.evaluate(() => __memsnap.timelines.length);
  if (n === 2) {
    await zoomIntoPeak(name, page, 1);
    const views = await page.evaluate(() => __memsnap.timelines.map((t) => [t.map.fwd(t.a), t.map.fwd(t.b)]));
    if (Math.abs(views[0][0] - views[1][0]) > 1e-6 * Math.abs(views[0][1]) + 1e-6 ||
        Math.abs(views[0][1] - views[1][1]) > 1e-6 * Math.abs(views[0][1]) + 1e-6) {
      fail(name, `the two timelines are not aligned after a zoom: ${JSON.stringify(views)}`);
    }
    for (const mode of ["share", "steps", "time"]) {
      const button = page.locator(`button[data-align="${mode}"]`).first();
      if (await button.count() === 0) continue;
      await button.click();
      await checkTimelines(`${name} aligned on ${mode}`, page);
      // The growth to each file's peak is drawn as bands on the diff page as on the single page.
      for (let i = 0; i < n; i++) await checkBandsDrawn(`${name} aligned on ${mode}`, page, i);
    }
  }
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
}

// The memory that builds a peak is drawn as bands, not grey (issue 36 §2), in the pixels the page
// paints: zoomed into stretches of the rise to the peak (the last 10%, 2% and 0.5% of the trace
// before it), at most 10% of the coloured pixels under the curve are the grey band's. The figures
// (bands + grey = live) are checked elsewhere; this catches bands left out of the picture.
async function checkBandsDrawn(name, page, index) {
  const got = await page.evaluate(async (i) => {
    const t = __memsnap.timelines[i], out = [];
    if (!t.dev.peak) return out;
    const x = t.dev.peak.x;
    for (const f of [0.1, 0.02, 0.005]) {
      const w = Math.max(t.span * f, t.minWidth());
      t.setView(x - w, x + w * 0.02);
      t.u.redraw(false, false);
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const bb = t.u.bbox, img = t.u.ctx.getImageData(bb.left, bb.top, bb.width, bb.height).data;
      let grey = 0, colored = 0;
      for (let p = 0; p < img.length; p += 4) {
        if (img[p + 3] < 255) continue;
        const [r, g, b] = [img[p], img[p + 1], img[p + 2]];
        if (r > 240 && g > 240 && b > 240) continue;  // background, grid
        colored++;
        if (Math.abs(r - 0xc5) <= 2 && Math.abs(g - 0xcb) <= 2 && Math.abs(b - 0xd6) <= 2) grey++;
      }
      out.push({ view: [t.a, t.b], grey, colored });
    }
    t.reset();
    return out;
  }, index);
  for (const g of got) {
    if (g.colored === 0) { fail(name, `timeline ${index}: nothing drawn zoomed to ${g.view}`); continue; }
    if (g.grey > 0.1 * g.colored) {
      fail(name, `timeline ${index}: zoomed into the rise to the peak (${g.view.map((v) => v.toFixed(0))}), ` +
        `${(100 * g.grey / g.colored).toFixed(1)}% of the drawn pixels are the grey band (want at most 10%)`);
    }
  }
}

async function checkInconsistent(name, input) {
  const amplified = amplify(input, 4, path.join(tmp, `${name}.json`));
  const html = report(name, [amplified]);
  const page = await open(name, html);
  const figs = await checkTimelines(name, page);
  const words = await page.evaluate(() => document.querySelector(".note.warn") && document.querySelector(".note.warn").textContent);
  if (!words || !/does not explain the snapshot's final state/.test(words)) fail(name, "the page does not say what the trace cannot explain");
  const sites = await page.evaluate(() => [__memsnap.timelines[0].dev.peak.bytes, JSON.parse(document.getElementById("memsnap-data").textContent).peak_sites.total_bytes]);
  if (sites[1] > sites[0] * 1.01 + 1e6) fail(name, `alive at the peak lists ${sites[1]} against a ${sites[0]} peak`);
  await checkKindsUnderCurve(name, page);
  await checkWords(name, page);
  if (figs.length) await zoomIntoPeak(name, page, 0);
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
}

// A page checked for its cached segment timeline only: an expandable segment's unmap that starts
// inside one mapping and ends inside the next (issue 36 §1).
async function checkSegmentsOnly(name, input) {
  const html = report(name, [input]);
  const page = await open(name, html);
  await checkSegmentTimeline(name, page, input);
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
}

// The 2.2 M-event generated file (build/bench/memsnap_gen, as bench/run_bench.py makes case a):
// every step's swing of 9 to 13 GiB is made of thousands of activations, which the finest zoom
// must draw as bands (issue 36 §2). Its curves are checked against the CLI on the smaller files.
async function checkGenerated(name) {
  const gen = path.join(path.dirname(memsnap), "bench", "memsnap_gen");
  if (!fs.existsSync(gen)) { console.log(`not checked ${name}: ${gen} is not built`); return; }
  const input = path.join(tmp, `${name}.pickle`);
  execFileSync(gen, ["--events", "2200000", "--seed", "1", "--devices", "1", "--protocol", "4", "-o", input], { stdio: "ignore" });
  const html = report(name, [input]);
  fs.rmSync(input, { force: true });
  const page = await open(name, html);
  await checkSections(name, page);
  await checkTimelines(name, page);
  await zoomIntoPeak(name, page, 0);
  await checkSegmentTimeline(name, page);
  // Too long to carry every event's change: the page gives the command for the exact state.
  await checkStateAtEvent(name, page, input, false);
  checkConsole(name, page);
  await page.close();
  console.log(`checked ${name}: ${html}`);
}

// More devices than the page draws (issue 54): 100 devices of one 2 MiB allocation each, written
// by bench/cost_shapes.py. The 64 with the largest reserved peaks are drawn, the other 36 are a
// row each, largest first, and the words say how to see one of them.
async function checkManyDevices(name) {
  const input = path.join(tmp, `${name}.pickle`);
  execFileSync("python3", [path.join(sourceDir, "bench", "cost_shapes.py"), "traced-devices", "100", "-o", input]);
  const html = report(name, [input]);
  const page = await open(name, html);
  await checkSections(name, page);
  const got = await page.evaluate(() => ({
    drawn: [...document.querySelectorAll('[data-section="timeline"]')].length,
    rows: [...document.querySelectorAll('[data-section="other-devices"] tbody tr')].map((r) => r.firstChild.textContent),
    text: (document.querySelector('[data-section="other-devices"]') || {}).innerText || "",
  }));
  if (got.drawn !== 64) fail(name, `${got.drawn} devices drawn, want 64`);
  if (got.rows.length !== 36) fail(name, `${got.rows.length} rows of other devices, want 36`);
  // Every device's peak is its one 2 MiB block: the ties go to the lower device, so 0-63 are
  // drawn and 64-99 listed in order.
  if (got.rows.join(",") !== Array.from({ length: 36 }, (_, i) => String(64 + i)).join(",")) {
    fail(name, `other devices listed as ${got.rows.join(",")}`);
  }
  if (!/100\u00a0devices: the 64 with the largest reserved peaks/.test(got.text) || !/--device N/.test(got.text)) {
    fail(name, `the other devices' note reads: ${got.text.slice(0, 300)}`);
  }
  checkConsole(name, page);
  await page.close();
  fs.rmSync(input, { force: true });
  console.log(`checked ${name}: ${html}`);
}

try {
  if (!corpus) {
    await checkManyDevices("many-devices");
    await checkGenerated("generated-2.2M");
    const testdata = path.join(sourceDir, "testdata");
    const basic = path.join(testdata, "report_basic.json");
    await checkSinglePage("basic", basic);
    // Two configurations whose curves are the recorded one's: the legend says so.
    await checkSinglePage("replay", basic, ["--replay", "expandable_segments:True", "--replay", "expandable_segments:False"]);
    await checkSinglePage("attribution", path.join(testdata, "attribution_training.json"), [],
      /^linear \u2190 model\/net\.py:15 forward$/);
    // A trace without times: its x axis counts events (an axis that read "-0", a state title
    // that said "after event 3 (event 3)").
    await checkPlainPage("events-only", path.join(testdata, "timeline_legacy_2_0.json"));
    await checkDiffPage("diff", path.join(testdata, "summary_basic.json"), basic);
    await checkInconsistent("inconsistent-basic", path.join(testdata, "frag_trace.json"));
    await checkSegmentsOnly("expandable-unmap", path.join(testdata, "timeline_expandable_unmap.json"));
  } else {
    const files = corpusFiles;
    const pick = (re) => files.find((f) => re.test(path.basename(f)));
    const largest = files[0];
    await checkSinglePage("corpus-largest", largest);
    const oom = pick(/oom|ConstructorSun/);
    if (oom) await checkSinglePage("corpus-oom", oom);
    // Three devices, expandable segments, an OOM on a full card (issue 36 §1).
    const expandable = pick(/ConstructorSun.*b5ef67ce/);
    if (expandable && expandable !== oom) await checkSinglePage("corpus-expandable", expandable);
    const fullstep = pick(/ctx256_fullstep/);
    if (fullstep) await checkSinglePage("corpus-fullstep", fullstep);
    const other = pick(/medium_256_training/);
    if (other) await checkDiffPage("corpus-diff", other, largest);
    // Context 256 against 512: the forward pass grows from 30 to 41 GiB (issue 36 §2).
    const fwd256 = pick(/ctx256_forward___019e70b3/), fwd512 = pick(/ctx512_forward___b9620ccc/);
    if (fwd256 && fwd512) await checkDiffPage("corpus-diff-forward", fwd256, fwd512);
    await checkInconsistent("inconsistent-corpus", largest);
  }
} finally {
  await browser.close();
  if (!keep) fs.rmSync(tmp, { recursive: true, force: true });
}
for (const f of failures) console.log("FAIL:", f);
process.exit(failures.length ? 1 : 0);
