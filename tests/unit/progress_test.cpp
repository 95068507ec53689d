#include "memsnap/util/progress.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

namespace memsnap {
namespace {

ProgressOptions Forced(std::ostream& out) {
  ProgressOptions o;
  o.out = &out;
  o.fd = -1;  // treat `out` as a terminal
  o.delay_s = 0;
  o.interval_s = 0;
  o.bar_width = 10;
  return o;
}

TEST_SUITE("progress") {
  TEST_CASE("a progress line shows the bar, the percentage, the amounts and the time") {
    ProgressOptions o;
    o.bar_width = 10;
    CHECK(FormatProgressLine("reading a.pickle", 512, 2048, 1.25, o) ==
          "reading a.pickle  [##........]  25%  512 B / 2.0 KiB  1.2 s");
    CHECK(FormatProgressLine("x", 4096, 2048, 0, o) ==
          "x  [##########] 100%  2.0 KiB / 2.0 KiB  0.0 s");
    o.bytes = false;
    CHECK(FormatProgressLine("events", 1234567, 0, 2.0, o) == "events  1,234,567  2.0 s");
    CHECK(FormatProgressLine("analyzing", 0, 0, 3.0, o) == "analyzing  3.0 s");
  }

  TEST_CASE("a progress bar draws on a terminal and clears its line when finished") {
    std::ostringstream out;
    ProgressBar bar("reading", 100, Forced(out));
    CHECK(bar.active());
    bar.Update(50);
    CHECK(bar.drawn());
    bar.Finish();
    std::string text = out.str();
    CHECK(text.find('\r') == 0);
    CHECK(text.find("[#####.....]  50%") != std::string::npos);
    CHECK(text.back() == '\r');  // the line is blanked and the cursor back
    bar.Finish();                // idempotent
    CHECK(out.str() == text);
  }

  TEST_CASE("a progress bar prints nothing when disabled, before its delay, or off a terminal") {
    std::ostringstream out;
    SUBCASE("--quiet") {
      ProgressOptions o = Forced(out);
      o.enabled = false;
      ProgressBar bar("x", 10, o);
      CHECK(!bar.active());
      bar.Update(5);
    }
    SUBCASE("fast runs") {
      ProgressOptions o = Forced(out);
      o.delay_s = 3600;
      ProgressBar bar("x", 10, o);
      bar.Update(5);
      bar.StartTicker();
      CHECK(!bar.drawn());
    }
    SUBCASE("not a terminal") {
      std::FILE* f = std::tmpfile();
      REQUIRE(f != nullptr);
      ProgressOptions o = Forced(out);
      o.fd = fileno(f);
      ProgressBar bar("x", 10, o);
      CHECK(!bar.active());
      bar.Update(5);
      std::fclose(f);
    }
    CHECK(out.str().empty());
  }

  TEST_CASE("the ticker stops when the bar finishes") {
    std::ostringstream out;
    ProgressOptions o = Forced(out);
    o.interval_s = 0.01;
    ProgressBar bar("phase", 0, o);
    bar.StartTicker();
    bar.SetLabel("phase two");
    bar.Finish();  // joins the ticker; must not hang
    CHECK(bar.active());
  }

  TEST_CASE("the process-wide default follows SetProgressEnabled") {
    SetProgressEnabled(false);
    CHECK(!ProgressOptions::Default().enabled);
    SetProgressEnabled(true);
    CHECK(ProgressOptions::Default().enabled);
  }
}

}  // namespace
}  // namespace memsnap
