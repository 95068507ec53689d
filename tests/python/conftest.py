"""Fixtures of the Python module's tests (tests/python; run by ctest as python/module and
python/corpus, see tests/CMakeLists.txt). The environment names what the tests use:
  PYTHONPATH           build/python (the package the build made)
  MEMSNAP_BIN          the memsnap executable, whose --json the module must equal
  MEMSNAP_GEN          build/bench/memsnap_gen (a large generated snapshot for the GIL test)
  MEMSNAP_SOURCE_DIR   the checkout (testdata/)
  MEMSNAP_CORPUS_DIR   the real-snapshot corpus; its tests are skipped, never passed, without it
                       (MEMSNAP_REQUIRE_CORPUS=1 fails instead; MEMSNAP_CORPUS_FILES=N bounds it)
"""
import json
import os
import re
import subprocess

import pytest

SOURCE = os.environ.get("MEMSNAP_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
TESTDATA = os.path.join(SOURCE, "testdata")


def corpus_files():
    """The corpus as the other corpus tests find it (tests/consistency/check_consistency.py)."""
    root = os.environ.get("MEMSNAP_CORPUS_DIR", "")
    if not root or not os.path.isdir(root):
        return []
    files = sorted(os.path.join(root, f) for f in os.listdir(root)
                   if re.search(r"\.(pickle|pkl|json|html|gz)$", f) and f != "manifest.json")
    limit = int(os.environ.get("MEMSNAP_CORPUS_FILES", "0") or 0)
    if limit and len(files) > limit:  # spread over the corpus
        files = [files[i * len(files) // limit] for i in range(limit)]
    return files


def pytest_configure(config):
    config.addinivalue_line("markers", "corpus: reads the real-snapshot corpus")


def pytest_collection_modifyitems(config, items):
    if corpus_files():
        return
    if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
        return  # the corpus tests fail on the absent corpus (see `corpus` below)
    skip = pytest.mark.skip(reason="the corpus (MEMSNAP_CORPUS_DIR) is absent")
    for item in items:
        if "corpus" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    # Every test skipped (the corpus entry without a corpus): exit 77, ctest's "skipped".
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed") and not stats.get("failed"):
        session.exitstatus = 77


@pytest.fixture(scope="session")
def corpus():
    files = corpus_files()
    if not files:
        if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
            pytest.fail("the corpus (MEMSNAP_CORPUS_DIR) is absent and MEMSNAP_REQUIRE_CORPUS=1")
        pytest.skip("the corpus (MEMSNAP_CORPUS_DIR) is absent")
    return files


@pytest.fixture(scope="session")
def cli():
    """Runs the memsnap executable: cli(args...) -> (exit code, stdout, stderr)."""
    binary = os.environ.get("MEMSNAP_BIN")
    if not binary:
        pytest.fail("MEMSNAP_BIN is not set (run the tests through ctest)")

    def run(*args):
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    def run(*args):
        code, out, err = cli(*args)
        assert code in (0, 1), err
        return json.loads(out)

    return run


def fixture(name):
    return os.path.join(TESTDATA, name)


@pytest.fixture
def testdata():
    return fixture
