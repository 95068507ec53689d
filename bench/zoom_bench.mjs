#!/usr/bin/env node
// The HTML report's zoom speed (issue 36 §4): the time from a mouse-wheel notch over the timeline
// to the frame that shows the new view, in Debian's headless Chromium driven by playwright-core
// (the browser driver of tests/browser). The page stamps each wheel event with its timeStamp; a
// requestAnimationFrame callback followed by a task marks the painted frame. Median and 90th
// percentile of --notches notches (zooming in and out around the peak, the mouse still), and the
// JS heap after them: as it is (garbage not yet collected included), and after a collection
// (HeapProfiler.collectGarbage), what the page holds. A first row times a blank canvas the same
// way: the browser's own latency, which no page can go under. Speed is a benchmark, not a test:
// nothing here runs in CI.
//
// With --diff A B it also times the diff page of A and B: the switch between its alignments
// (relative time, steps, share of each trace), from the click to the painted frame, 3 rounds.
//
// Usage: node bench/zoom_bench.mjs [--memsnap build/memsnap] [--notches 40] [--diff A B] FILE...
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const memsnap = opt("--memsnap", path.join(root, "build", "memsnap"));
const notches = Number(opt("--notches", "40"));
const diffAt = args.indexOf("--diff");
const diffFiles = diffAt >= 0 ? args.splice(diffAt, 3).slice(1) : null;
const { chromium } = await import(pathToFileURL(path.join(root, "web", "node_modules", "playwright-core", "index.mjs")).href);
const browser = await chromium.launch({ executablePath: process.env.MEMSNAP_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--enable-precise-memory-info"] });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memsnap-zoom-bench-"));
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const p90 = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))]; };
console.log("| file | page (MB) | wheel notch to painted frame, median (ms) | 90th percentile (ms) | JS heap after (MB) | after a GC (MB) |");
console.log("|---|---:|---:|---:|---:|---:|");
// The same timing of a page whose wheel handler only fills its canvas: what the browser itself
// takes from a wheel event to a painted frame (it dispatches wheel events with the next frame), the
// floor under every figure below on this machine at this load.
async function floor() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.setContent(`<canvas width="1400" height="340"></canvas><script>
    const c = document.querySelector("canvas"), ctx = c.getContext("2d");
    window.__zoomTimes = [];
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      ctx.fillStyle = "#" + (window.__zoomTimes.length % 2 ? "c5cbd6" : "1f5fbf");
      ctx.fillRect(0, 0, 1400, 340);
      const stamp = e.timeStamp;
      requestAnimationFrame(() => setTimeout(() => window.__zoomTimes.push(performance.now() - stamp), 0));
    }, { passive: false });
  </script>`);
  await page.mouse.move(700, 170);
  for (let k = 0; k < notches; k++) {
    await page.mouse.wheel(0, -300);
    await page.waitForFunction((n) => window.__zoomTimes.length >= n, k + 1, { timeout: 60000 });
  }
  const times = await page.evaluate(() => window.__zoomTimes);
  console.log(`| (a blank canvas: the browser's own floor) | | ${median(times).toFixed(1)} | ${p90(times).toFixed(1)} | | |`);
  await page.close();
}
try {
  await floor();
  for (const file of args) {
    const html = path.join(tmp, "page.html");
    execFileSync(memsnap, ["-q", "report", file, "-o", html]);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(pathToFileURL(html).href);
    await page.waitForFunction(() => document.body.dataset.rendered || document.body.dataset.jsError, null, { timeout: 120000 });
    const err = await page.evaluate(() => document.body.dataset.jsError);
    if (err) throw new Error(err);
    // Stamps: the wheel's timeStamp, then the end of the frame that follows its handler.
    await page.evaluate(() => {
      const t = __memsnap.timelines[0];
      t.host.scrollIntoView({ block: "center" });
      window.__zoomTimes = [];
      t.u.over.addEventListener("wheel", (e) => {
        const stamp = e.timeStamp;
        requestAnimationFrame(() => setTimeout(() => window.__zoomTimes.push(performance.now() - stamp), 0));
      });
    });
    const at = await page.evaluate(() => {
      const t = __memsnap.timelines[0], r = t.u.over.getBoundingClientRect();
      const x = t.dev.peak ? t.dev.peak.x : t.span / 2;
      return [r.left + t.u.valToPos(t.map.fwd(x), "x"), r.top + r.height / 2];
    });
    await page.mouse.move(at[0], at[1]);
    for (let k = 0; k < notches; k++) {
      // Ten notches in, ten out: through every level of detail and back.
      await page.mouse.wheel(0, Math.floor(k / 10) % 2 === 0 ? -300 : 300);
      await page.waitForFunction((n) => window.__zoomTimes.length >= n, k + 1, { timeout: 60000 });
    }
    const [times, heap] = await page.evaluate(() => [window.__zoomTimes,
      performance.memory ? performance.memory.usedJSHeapSize / 1e6 : NaN]);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("HeapProfiler.collectGarbage");
    const kept = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize / 1e6 : NaN));
    const mb = fs.statSync(html).size / 1e6;
    console.log(`| ${path.basename(file)} | ${mb.toFixed(1)} | ${median(times).toFixed(1)} | ${p90(times).toFixed(1)} | ${heap.toFixed(0)} | ${kept.toFixed(0)} |`);
    await page.close();
  }
  if (diffFiles) {
    const html = path.join(tmp, "diff.html");
    execFileSync(memsnap, ["-q", "report", ...diffFiles, "-o", html]);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(pathToFileURL(html).href);
    await page.waitForFunction(() => document.body.dataset.rendered || document.body.dataset.jsError, null, { timeout: 120000 });
    const times = [];
    for (let r = 0; r < 3; r++) {
      for (const mode of ["steps", "share", "time"]) {
        times.push(await page.evaluate((m) => new Promise((done) => {
          const b = document.querySelector(`button[data-align="${m}"]`);
          if (!b) { done(NaN); return; }
          const t0 = performance.now();
          b.click();
          requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
        }), mode));
      }
    }
    const ok = times.filter((t) => !Number.isNaN(t));
    console.log(`\n| diff page | page (MB) | alignment switch to painted frame, median (ms) | slowest (ms) |\n|---|---:|---:|---:|`);
    console.log(`| ${diffFiles.map((f) => path.basename(f)).join(" vs ")} | ${(fs.statSync(html).size / 1e6).toFixed(1)} | ${median(ok).toFixed(0)} | ${Math.max(...ok).toFixed(0)} |`);
    await page.close();
  }
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
