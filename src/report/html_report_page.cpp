// The page around the report's data: HTML skeleton and CSS. The script that draws the data is in
// html_report_script.cpp. Everything is inline: the page opens from disk with no network access.
#include <string>

#include "memsnap/report/html_report.h"
#include "report/html_report_internal.h"

namespace memsnap::report {

namespace {

constexpr const char* kHead = R"MSHTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="memsnap">
<title>memsnap report</title>
<style>
:root { --fg: #1d2330; --muted: #667085; --line: #d0d5dd; --bg: #ffffff; --panel: #f6f7f9;
        --live: #1f5fbf; --reserved: #b54708; --peak: #d92d20; --rest: #c5cbd6; --after: #1f5fbf;
        --before: #98a2b3; --grow: #d92d20; --shrink: #039855; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: var(--bg); }
header { padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--panel); }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .meta { color: var(--muted); font-size: 13px; }
main { padding: 8px 24px 40px; max-width: 1600px; }
section { margin: 22px 0; }
h2 { font-size: 17px; margin: 0 0 8px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
.note { color: var(--muted); font-size: 13px; margin: 4px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
        padding: 6px 12px; min-width: 130px; }
.card .k { color: var(--muted); font-size: 12px; }
.card .v { font-size: 17px; font-weight: 600; font-variant-numeric: tabular-nums; }
.chart { position: relative; width: 100%; }
svg { display: block; }
svg text { font: 11px system-ui, sans-serif; fill: var(--muted); }
.grid line { stroke: #eef0f3; }
.axis line, .axis path { stroke: var(--line); }
path.band { stroke: rgba(255,255,255,.5); stroke-width: .5; cursor: pointer; }
path.band:hover, path.band.sel { stroke: #000; stroke-width: 1.2; }
path.rest { fill: var(--rest); }
path.live { fill: none; stroke: var(--live); stroke-width: 1.3; }
path.livemin { fill: none; stroke: var(--live); stroke-width: .8; stroke-opacity: .35; }
path.reserved { fill: none; stroke: var(--reserved); stroke-width: 1.3; stroke-dasharray: 5 3; }
line.peak { stroke: var(--peak); stroke-width: 1.2; stroke-dasharray: 3 3; }
text.peak { fill: var(--peak); font-weight: 600; }
line.cross { stroke: #000; stroke-opacity: .25; pointer-events: none; }
.legend { display: flex; gap: 16px; flex-wrap: wrap; font-size: 12px; color: var(--muted);
          margin: 4px 0 0 70px; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle;
            margin-right: 5px; }
#tip { position: fixed; z-index: 10; pointer-events: none; background: rgba(20,24,33,.94);
       color: #fff; padding: 7px 9px; border-radius: 5px; font-size: 12px; max-width: 560px;
       white-space: pre-wrap; word-break: break-all; display: none; }
.details { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
           padding: 8px 12px; margin-top: 8px; min-height: 40px; }
.details pre, td pre { margin: 4px 0 0; font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace;
                       white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
th { color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.site { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px;
          word-break: break-all; }
summary { cursor: pointer; }
.bar { display: inline-block; height: 8px; background: var(--live); border-radius: 2px;
       vertical-align: middle; }
.bar.grow { background: var(--grow); } .bar.shrink { background: var(--shrink); }
.grow { color: var(--grow); } .shrink { color: var(--shrink); }
rect.seg-bg { fill: #f2f4f7; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
          vertical-align: -1px; margin-right: 4px; }
</style>
</head>
<body>
<header><h1 id="title">memsnap report</h1><div class="meta" id="meta"></div></header>
<main id="app"><noscript>This report draws its charts with JavaScript.</noscript></main>
<div id="tip"></div>
<script type="application/json" id="memsnap-data">)MSHTML";

constexpr const char* kTail = R"MSHTML(</script>
<script>
)MSHTML";

constexpr const char* kEnd = R"MSHTML(
</script>
</body>
</html>
)MSHTML";

}  // namespace

void WriteHtmlPage(const nlohmann::ordered_json& data, std::ostream& out) {
  // Strings come from the snapshot: invalid UTF-8 is replaced, and every '<' (which JSON has only
  // inside strings) is written as \u003c so no text can close the <script> element early.
  std::string json = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out << kHead;
  size_t start = 0;
  for (size_t pos = json.find('<'); pos != std::string::npos; pos = json.find('<', start)) {
    out.write(json.data() + start, static_cast<std::streamsize>(pos - start));
    out << "\\u003c";
    start = pos + 1;
  }
  out.write(json.data() + start, static_cast<std::streamsize>(json.size() - start));
  out << kTail << internal::PageScript() << kEnd;
}

}  // namespace memsnap::report
