#!/usr/bin/env node
// The HTML report's budget (issue 17): page size and the time headless Chromium takes to render
// it, from the start of the navigation to the end of the page's first draw (the page records it
// as window.__memsnap.render_ms). Best of --reps runs per file; memsnap's own time is read from
// --timings. Speed is a benchmark, not a test: nothing here runs in CI.
//
// Usage: node bench/report_bench.mjs [--memsnap build/memsnap] [--reps 3] FILE...
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const memsnap = opt("--memsnap", path.join(root, "build", "memsnap"));
const reps = Number(opt("--reps", "3"));
const { chromium } = await import(pathToFileURL(path.join(root, "web", "node_modules", "playwright-core", "index.mjs")).href);
const browser = await chromium.launch({ executablePath: process.env.MEMSNAP_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"] });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memsnap-report-bench-"));
console.log("| file | trace events | memsnap report (s) | page (MB) | render (s) |");
console.log("|---|---:|---:|---:|---:|");
try {
  for (const file of args) {
    const html = path.join(tmp, "page.html");
    let best = Infinity, analyze = Infinity, events = 0;
    for (let r = 0; r < reps; r++) {
      const t0 = process.hrtime.bigint();
      execFileSync(memsnap, ["-q", "report", file, "-o", html]);
      analyze = Math.min(analyze, Number(process.hrtime.bigint() - t0) / 1e9);
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      await page.goto(pathToFileURL(html).href);
      await page.waitForFunction(() => document.body.dataset.rendered || document.body.dataset.jsError, null, { timeout: 120000 });
      const [ms, n, err] = await page.evaluate(() => [__memsnap.render_ms, __memsnap.timelines.reduce((s, t) => s + t.dev.num_events, 0), document.body.dataset.jsError]);
      if (err) throw new Error(err);
      best = Math.min(best, ms / 1000);
      events = n;
      await page.close();
    }
    const mb = fs.statSync(html).size / 1e6;
    console.log(`| ${path.basename(file)} | ${events.toLocaleString("en-US")} | ${analyze.toFixed(2)} | ${mb.toFixed(1)} | ${best.toFixed(2)} |`);
  }
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
