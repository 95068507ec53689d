// The page around the report's data: the HTML skeleton, the chart library (uPlot, inlined with its
// licence) and the page's script and styles (web/src). Everything is inline: the page opens from
// disk with no network access.
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
)MSHTML";

constexpr const char* kBody = R"MSHTML(
</style>
</head>
<body>
<header><h1 id="title">memsnap report</h1><div class="meta" id="meta"></div></header>
<main id="app"><noscript>This report draws its charts with JavaScript.</noscript></main>
<div id="tip" role="tooltip"></div>
<script type="application/json" id="memsnap-data">)MSHTML";

// Writes `text` as a /*! ... */ comment (the licence notice kept with the library).
void WriteComment(std::string_view text, std::ostream& out) {
  out << "/*!\n";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    for (size_t p = line.find("*/"); p != std::string::npos; p = line.find("*/")) {
      line.replace(p, 2, "* /");
    }
    out << " * " << line << "\n";
    start = end + 1;
  }
  out << " */\n";
}

}  // namespace

void WriteHtmlPage(const nlohmann::ordered_json& data, std::ostream& out) {
  // Strings come from the snapshot: invalid UTF-8 is replaced, and every '<' (which JSON has only
  // inside strings) is written as \u003c so no text can close the <script> element early.
  std::string json = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out << kHead << internal::ChartLibraryStyle() << "\n" << internal::PageStyle() << kBody;
  size_t start = 0;
  for (size_t pos = json.find('<'); pos != std::string::npos; pos = json.find('<', start)) {
    out.write(json.data() + start, static_cast<std::streamsize>(pos - start));
    out << "\\u003c";
    start = pos + 1;
  }
  out.write(json.data() + start, static_cast<std::streamsize>(json.size() - start));
  out << "</script>\n<script>\n";
  WriteComment(std::string(internal::ChartLibraryVersion()) +
                   " (https://github.com/leeoniya/uPlot)\n" +
                   std::string(internal::ChartLibraryLicense()),
               out);
  out << internal::ChartLibraryScript() << "\n</script>\n<script>\n";
  out << "(function () {\n\"use strict\";\n" << internal::PageScript() << "\n})();\n";
  out << "</script>\n</body>\n</html>\n";
}

}  // namespace memsnap::report
