#!/usr/bin/env node
// Makes the screenshots of docs/report.md: `memsnap report` pages of three real snapshots from the
// corpus (../shared/snapshots), rendered in headless Chromium (Debian's, via playwright-core from
// web/node_modules), at 1400 px and at 800 px wide, zoomed into the peak the way a user would.
//
// Usage: node scripts/report_screenshots.mjs [MEMSNAP] [OUT_DIR]
//        (defaults: build/memsnap, docs/images; run scripts/setup.sh and scripts/build.sh first)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const memsnap = process.argv[2] || path.join(root, "build", "memsnap");
const outDir = process.argv[3] || path.join(root, "docs", "images");
const corpus = path.resolve(root, "..", "shared", "snapshots");
const browserPath = process.env.MEMSNAP_CHROMIUM || "/usr/bin/chromium";
const { chromium } = await import(pathToFileURL(path.join(root, "web", "node_modules", "playwright-core", "index.mjs")).href);

// The pages: a training step, a run that hit an OOM with expandable segments, a full step that
// releases and re-creates segments, and a diff of two model sizes.
const shots = [
  { name: "report-training", files: ["Wedsonlin_a2__results_medium_512_training_memory_snapshot__61dcd14d.pickle"],
    width: 1400, zoom: "peak", state: "peak live", height: 1450 },
  { name: "report-oom", files: ["ConstructorSun_code_location__memory_snapshot__b5ef67ce.pickle"],
    width: 1400, zoom: "oom", state: "OOM", height: 1450 },
  { name: "report-fullstep", files: ["kkaitlyn111_a2__memory_files_memory_ctx256_fullstep___cd7ef486.pickle"],
    width: 1400, state: "peak reserved", height: 1450 },
  { name: "report-training-800", files: ["Wedsonlin_a2__results_medium_512_training_memory_snapshot__61dcd14d.pickle"],
    width: 800, zoom: "peak", state: "peak live", height: 1500, noHover: true },
  { name: "report-diff", files: ["kkaitlyn111_a2__memory_files_memory_ctx128_forward___a97ea92b.pickle",
    "kkaitlyn111_a2__memory_files_memory_ctx256_forward___019e70b3.pickle"], width: 1400, height: 1500, align: "steps" },
];

fs.mkdirSync(outDir, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memsnap-shots-"));
const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox", "--disable-gpu"] });
try {
  for (const s of shots) {
    const html = path.join(tmp, s.name + ".html");
    execFileSync(memsnap, ["-q", "report", ...s.files.map((f) => path.join(corpus, f)), "-o", html]);
    const page = await browser.newPage({ viewport: { width: s.width, height: s.height } });
    page.on("pageerror", (e) => { throw e; });
    await page.goto(pathToFileURL(html).href);
    await page.waitForFunction(() => document.body.dataset.rendered, null, { timeout: 60000 });
    if (s.align) await page.locator(`button[data-align="${s.align}"]`).first().click();
    if (s.zoom) {
      await page.locator(`button:text-is("zoom to the ${s.zoom === "oom" ? "OOM" : "peak"}")`).first().click();
    }
    if (s.state) await page.locator(`button[data-moment="${s.state}"]`).first().click();
    // Hover the timeline at the peak for the tooltip a user would see.
    const at = await page.evaluate(() => {
      const t = __memsnap.timelines[0];
      if (!t || !t.dev.peak) return null;
      const r = t.u.over.getBoundingClientRect();
      const x = Math.min(Math.max(t.dev.peak.x, t.a), t.b);
      const col = t.columnAt(x);
      return { x: r.left + t.u.valToPos(t.map.fwd(x), "x") + 2,
        y: r.top + t.u.valToPos(col.live * 0.45, "y") };
    });
    if (at && !s.align && !s.noHover) await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(100);
    const out = path.join(outDir, s.name + ".png");
    await page.screenshot({ path: out });
    console.log("wrote", path.relative(root, out));
    await page.close();
  }
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
