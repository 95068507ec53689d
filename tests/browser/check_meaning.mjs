#!/usr/bin/env node
// Opens `memsnap report` pages in headless Chromium (as check_report.mjs does) and checks what the
// page says an allocation *is*, against the CLI (issue 35):
//   --case user_category: `report --category NAME=REGEX` shows the user's category in the kinds
//     table at the peak (with the bytes `top --by category --category NAME=REGEX --json` gives)
//     and in a band's hover;
//   --case metadata: a band whose allocation carries `user_metadata` and `compile_context` says
//     both in its hover (`blocks --json` names them).
//
// Usage: node check_meaning.mjs MEMSNAP SOURCE_DIR --case user_category|metadata [--keep DIR]
// Exits 77 (ctest SKIP_RETURN_CODE) when Chromium is absent (MEMSNAP_CHROMIUM overrides
// /usr/bin/chromium).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const SKIP = 77;
const [memsnap, sourceDir] = process.argv.slice(2);
const arg = (flag) => {
  const at = process.argv.indexOf(flag);
  return at > 0 ? process.argv[at + 1] : null;
};
const which = arg("--case");
const keep = arg("--keep");
if (which !== "user_category" && which !== "metadata") {
  console.log("usage: check_meaning.mjs MEMSNAP SOURCE_DIR --case user_category|metadata");
  process.exit(2);
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

const tmp = keep || fs.mkdtempSync(path.join(os.tmpdir(), "memsnap-meaning-"));
fs.mkdirSync(tmp, { recursive: true });
const failures = [];
const fail = (what) => failures.push(`${which}: ${what}`);
const run = (args) => execFileSync(memsnap, ["-q", ...args], { encoding: "utf8", maxBuffer: 1 << 30 });

const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox", "--disable-gpu"] });

async function open(html) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(pathToFileURL(html).href);
  await page.waitForFunction(() => document.body.dataset.rendered || document.body.dataset.jsError, null, { timeout: 60000 });
  const jsError = await page.evaluate(() => document.body.dataset.jsError || null);
  if (jsError) fail(`JavaScript error: ${jsError}`);
  page.memsnapErrors = errors;
  return page;
}

// Hovers the first band (of device 0's timeline, whole trace shown) that `pick` chooses, in the
// middle of its span at the column where it is tallest; returns the tooltip's text.
async function hoverBand(page, pick) {
  await page.evaluate(() => { __memsnap.timelines[0].reset(); __memsnap.timelines[0].host.scrollIntoView({ block: "center" }); });
  const target = await page.evaluate((pickSrc) => {
    const choose = new Function("b", "tables", `return (${pickSrc})(b, tables);`);
    const t = __memsnap.timelines[0], r = t.u.over.getBoundingClientRect();
    // Every whole pixel across the plot: the first column where a chosen band is a pixel tall.
    for (let px = Math.ceil(r.left) + 2; px < r.right - 2; px++) {
      const col = t.columnAt(t.xAtPointer({ clientX: px }));
      for (const c of col.bands) {
        const b = t.lod.bands[c.id];
        if (!choose(b, t.tables)) continue;
        const y0 = t.u.valToPos(c.bottom, "y"), y1 = t.u.valToPos(c.bottom + c.size, "y");
        if (Math.abs(y0 - y1) < 3) continue;
        const y = Math.round(r.top + (y0 + y1) / 2), v = t.u.posToVal(y - r.top, "y");
        if (v >= c.bottom && v < c.bottom + c.size) return { x: px, y, id: c.id };
      }
    }
    return null;
  }, pick.toString());
  if (!target) return null;
  await page.mouse.move(target.x - 20, target.y - 20);
  await page.mouse.move(target.x, target.y);
  await page.waitForTimeout(30);
  return page.evaluate(() => {
    const t = document.getElementById("tip");
    return t.style.display !== "none" ? t.textContent : null;
  });
}

function checkConsole(page) {
  for (const e of page.memsnapErrors) fail(`console error: ${e}`);
}

// --category NAME=REGEX: the kinds table at the peak and a band's hover name it, with top's bytes.
async function checkUserCategory() {
  const input = path.join(sourceDir, "testdata", "attribution_training.json");
  const name = "attn";
  const flag = `${name}=model/net\\.py:30`;  // the einsums of net.py:30 attn (EA, EB)
  const top = JSON.parse(run(["top", "--by", "category", "--category", flag, "--json", input]));
  const row = top.rows.find((r) => r.key === name || r.site === name);
  if (!row || !(row.bytes > 0)) { fail(`top --by category --category ${flag} has no ${name} row`); return; }
  const html = path.join(tmp, "user_category.html");
  run(["report", input, "--category", flag, "-o", html]);
  const page = await open(html);
  const got = await page.evaluate((n) => {
    const c = (__memsnap.categories || [])[0];
    const rows = [...document.querySelectorAll("table.cats tbody tr")].map((tr) => tr.textContent.replace(/\u00a0/g, " "));
    return { peak: c ? c.peak[n] : undefined, rows };
  }, name);
  if (got.peak !== row.bytes) fail(`the page's ${name} at the peak is ${got.peak} B, top says ${row.bytes} B`);
  const shown = got.rows.find((t) => t.startsWith(name));
  if (!shown) {
    fail(`the kinds table at the peak has no ${name} row: ${got.rows.join(" | ")}`);
  } else {
    const bytes = run(["top", "--by", "category", "--category", flag, input]).split("\n")
      .find((l) => l.trim().split(/\s{2,}/).pop() === name);
    const text = bytes ? bytes.trim().split(/\s{2,}/)[0] : null;
    if (!text || !shown.includes(text)) fail(`the kinds table shows "${shown}", top prints "${text}" for ${name}`);
  }
  const tip = await hoverBand(page, (b, tables) => tables.categories[b.cat] === "attn");
  if (tip == null) fail(`no band of category ${name} to hover`);
  // The category, then the rule that decided it (docs/attribution.md, "User categories").
  else if (!tip.includes(`${name} (rule user_category), `)) fail(`the hover of an ${name} band does not name it and its rule: ${tip.slice(0, 200)}`);
  checkConsole(page);
  await page.close();
}

// user_metadata and compile_context: a band's hover says both, as blocks --json names them.
async function checkMetadata() {
  const input = path.join(sourceDir, "testdata", "metadata.json");
  const blocks = JSON.parse(run(["blocks", "--all", "--json", input])).blocks;
  const withBoth = blocks.filter((b) => b.user_metadata && b.compile_context);
  if (!withBoth.length) { fail("blocks --json names no block with both user_metadata and compile_context"); return; }
  const html = path.join(tmp, "metadata.html");
  run(["report", input, "-o", html]);
  const page = await open(html);
  for (const want of withBoth) {
    const tip = await hoverBand(page, new Function("b", `return b.addr === ${want.address} && b.size === ${want.requested_size};`));
    if (tip == null) { fail(`no band of the block at ${want.address} to hover`); continue; }
    if (!tip.includes(`metadata: ${want.user_metadata}`)) fail(`the hover of the block at ${want.address} does not say its metadata ${want.user_metadata}: ${tip.slice(0, 300)}`);
    if (!tip.includes(`compile context: ${want.compile_context}`)) fail(`the hover of the block at ${want.address} does not say its compile context ${want.compile_context}: ${tip.slice(0, 300)}`);
  }
  // A band without either says neither.
  const none = blocks.find((b) => !b.user_metadata && !b.compile_context);
  if (none) {
    const tip = await hoverBand(page, new Function("b", `return b.addr === ${none.address} && b.size === ${none.requested_size};`));
    if (tip != null && /metadata:|compile context:/.test(tip)) fail(`a band without metadata says some: ${tip.slice(0, 300)}`);
  }
  checkConsole(page);
  await page.close();
}

try {
  if (which === "user_category") await checkUserCategory();
  else await checkMetadata();
} finally {
  await browser.close();
  if (!keep) fs.rmSync(tmp, { recursive: true, force: true });
}
for (const f of failures) console.log("FAIL:", f);
if (!failures.length) console.log(`checked ${which}`);
process.exit(failures.length ? 1 : 0);
