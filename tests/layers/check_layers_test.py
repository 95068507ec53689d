#!/usr/bin/env python3
"""scripts/check_layers.py catches each kind of layer break (the build runs it on the real tree).

  check_layers_test.py SOURCE_DIR --layer=NAME:DEPS ...   (the rules cmake/layers.cmake passes)

Copies src/, include/ and docs/design.md into a scratch folder, checks the copy passes, then
breaks it one way at a time and requires the checker to fail naming the file, line and rule."""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    source_dir, rules = sys.argv[1], sys.argv[2:]
    checker = os.path.join(source_dir, "scripts", "check_layers.py")
    failures = []

    def run(root):
        p = subprocess.run([sys.executable, checker, f"--root={root}"] + rules,
                           capture_output=True, text=True)
        return p.returncode, p.stderr

    with tempfile.TemporaryDirectory() as tmp:
        def fresh():
            root = os.path.join(tmp, "tree")
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(os.path.join(source_dir, "src"), os.path.join(root, "src"))
            shutil.copytree(os.path.join(source_dir, "include"), os.path.join(root, "include"))
            os.makedirs(os.path.join(root, "docs"))
            shutil.copy(os.path.join(source_dir, "docs", "design.md"), os.path.join(root, "docs"))
            return root

        def edit(root, rel, old, new):
            path = os.path.join(root, rel)
            text = open(path).read()
            assert old in text, f"{rel} has no {old!r}: update this test"
            open(path, "w").write(text.replace(old, new, 1))

        def expect(name, root, needles):
            code, err = run(root)
            if code != 1 or not all(n in err for n in needles):
                failures.append(f"{name}: exit {code}, wanted 1 and {needles}; stderr:\n{err}")

        code, err = run(fresh())
        if code != 0:
            failures.append(f"the unchanged tree fails:\n{err}")

        root = fresh()
        edit(root, "src/io/input.cpp", '#include "memsnap/io/input.h"\n',
             '#include "memsnap/io/input.h"\n#include "memsnap/model/snapshot.h"\n')
        expect("io includes the model", root, [
            'src/io/input.cpp:2: includes "memsnap/model/snapshot.h": layer io may not depend on '
            'model (io may depend on: util;'])

        root = fresh()
        edit(root, "include/memsnap/model/snapshot.h", "#pragma once\n",
             "#pragma once\n#if __has_include(\"memsnap/analysis/timeline/timeline.h\")\n#endif\n")
        expect("a header reaches up through __has_include", root, [
            "include/memsnap/model/snapshot.h:", "layer model may not depend on analysis/timeline"])

        root = fresh()
        edit(root, "src/cli/app.cpp", '#include "memsnap/cli/app.h"\n',
             '#include "memsnap/cli/app.h"\n#include "analysis/allocator/frag_layout.h"\n')
        expect("a private header of another layer", root, [
            'src/cli/app.cpp:2: includes "analysis/allocator/frag_layout.h": headers under '
            'src/analysis/allocator/ are private to layer analysis/allocator'])

        root = fresh()
        edit(root, "src/analysis/timeline/timeline.cpp", '#include "memsnap/analysis/timeline/timeline.h"\n',
             '#include "memsnap/analysis/timeline/timeline.h"\n#include "memsnap/analysis/sites/group.h"\n')
        expect("a lower analysis sub-layer reaches up", root, [
            'src/analysis/timeline/timeline.cpp:4: includes "memsnap/analysis/sites/group.h": layer '
            'analysis/timeline may not depend on analysis/sites'])

        root = fresh()
        os.makedirs(os.path.join(root, "src", "analysis", "extra"))
        open(os.path.join(root, "src", "analysis", "extra", "x.cpp"), "w").write("int x;\n")
        expect("an analysis folder that is no sub-layer", root, ["src/analysis/extra/x.cpp:1: not in any layer"])

        root = fresh()
        os.makedirs(os.path.join(root, "src", "extra"))
        open(os.path.join(root, "src", "extra", "x.cpp"), "w").write("int x;\n")
        expect("a folder that is no layer", root, ["src/extra/x.cpp:1: not in any layer"])

        root = fresh()
        edit(root, "docs/design.md", "| query, analysis, sim, model, util |",
             "| query, analysis, model, util |")
        expect("docs/design.md disagrees", root, [
            "layer report may depend on analysis, model, query, util here but on analysis, model, "
            "query, sim, util in cmake/layers.cmake"])

    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
