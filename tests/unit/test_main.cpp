// The unit-test runner: doctest's own main, plus what doctest lacks, a skipped test case.
//
// A corpus test (test suite "corpus") whose corpus is absent calls testing::SkipTestCase()
// (through testing::CorpusDir/CorpusFiles). When every test case that ran was skipped the runner
// exits 77, which ctest's SKIP_RETURN_CODE reports as "Not Run (skipped)", never as passed;
// tests/CMakeLists.txt gives the corpus test cases their own ctest entries so that this is what
// happens without the corpus. A run that mixes passed and skipped cases exits 0 and says how
// many were skipped. A run whose filters match no test case fails, so a renamed file cannot
// silently empty its ctest entry.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <string>

#include "test_util.h"

namespace memsnap::testing {
namespace {

struct RunState {
  std::string suite;        // of the test case running now
  std::string skip_reason;  // set by SkipTestCase() for the test case running now
  int ran = 0;
  int skipped = 0;
  std::string last_reason;
};

RunState& State() {
  static RunState state;
  return state;
}

// Sees each test case start and end; reports nothing itself.
class SkipListener : public doctest::IReporter {
 public:
  explicit SkipListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    State().suite = tc.m_test_suite ? tc.m_test_suite : "";
    State().skip_reason.clear();
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    ++State().ran;
    if (!State().skip_reason.empty()) {
      ++State().skipped;
      State().last_reason = State().skip_reason;
    }
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

std::string_view CurrentTestSuite() { return State().suite; }

void SkipTestCase(const std::string& reason) {
  State().skip_reason = reason;
  MESSAGE("skipped: " << reason);
}

}  // namespace memsnap::testing

REGISTER_LISTENER("memsnap-skip", 1, memsnap::testing::SkipListener);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases, ...
  const memsnap::testing::RunState& s = memsnap::testing::State();
  if (s.ran == 0) {
    std::cerr << "memsnap_tests: no test case matched the filters\n";
    return 1;
  }
  if (result != 0 || s.skipped == 0) return result;
  std::cerr << "memsnap_tests: " << s.skipped << " of " << s.ran
            << " test cases skipped: " << s.last_reason << "\n";
  return s.skipped == s.ran ? memsnap::testing::kSkipExitCode : 0;
}
