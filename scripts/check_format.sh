#!/usr/bin/env bash
# Checks C and C++ sources against the repository's .clang-format (Google style, 100 columns).
#
#   scripts/check_format.sh                 every tracked source file (src include tests bench python)
#   scripts/check_format.sh --base REF      only the lines changed since REF (merge base with HEAD,
#                                           committed or not): what a branch or a commit touched
#   scripts/check_format.sh --fix [--base REF]   rewrite instead of checking
#
# Each problem is printed as `file:line:col: error: code should be clang-formatted`; the exit
# status is 1 when any file (or changed line) is not formatted. The formatter is Debian's
# clang-format (version 14 on bookworm; installed by MEMSNAP_SETUP_FORMAT=1 scripts/setup.sh):
# other versions break lines differently, so CI and developers use the same one.
set -euo pipefail
cd "$(dirname "$0")/.."

base="" fix=0
while (($#)); do
  case "$1" in
    --base) base="${2:?--base needs a git revision}"; shift 2 ;;
    --fix) fix=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "check_format: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

MEMSNAP_SETUP_FORMAT=1 ./scripts/setup.sh
clang_format="${CLANG_FORMAT:-clang-format}"
echo "check_format: $("$clang_format" --version)" >&2

dirs=(src include tests bench python)
exts='\.(cpp|cc|h|hpp|c)$'

if [[ -z "$base" ]]; then
  mapfile -t files < <(git ls-files -- "${dirs[@]}" | grep -E "$exts" || true)
  ((${#files[@]})) || { echo "check_format: no source files" >&2; exit 0; }
  if ((fix)); then
    "$clang_format" -i "${files[@]}"
    exit 0
  fi
  if "$clang_format" --dry-run --Werror "${files[@]}"; then
    echo "check_format: ${#files[@]} files formatted" >&2
    exit 0
  fi
  echo "check_format: files above are not formatted; scripts/check_format.sh --fix rewrites" \
    "them (or only your changes: --fix --base main)" >&2
  exit 1
fi

# Changed lines only: git-clang-format formats the lines that differ from the merge base.
merge_base="$(git merge-base "$base" HEAD)"
mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$merge_base" -- "${dirs[@]}" |
                     grep -E "$exts" || true)
if ((${#files[@]} == 0)); then
  echo "check_format: no C/C++ file changed since $base" >&2
  exit 0
fi
gcf=(git clang-format --binary "$(command -v "$clang_format")")
if ((fix)); then
  "${gcf[@]}" -f "$merge_base" -- "${files[@]}" >/dev/null
  exit 0
fi
diff="$("${gcf[@]}" --diff "$merge_base" -- "${files[@]}" || true)"
if [[ -z "$diff" || "$diff" == "no modified files to format" ||
      "$diff" == "clang-format did not modify any files" ]]; then
  echo "check_format: changed lines of ${#files[@]} files formatted (since $base)" >&2
  exit 0
fi
printf '%s\n' "$diff"
# The same problems as file:line, for editors and CI logs.
printf '%s\n' "$diff" | awk '
  /^--- a\// { file = substr($0, 7) }
  /^@@ / { split(substr($2, 2), a, ","); print file ":" a[1] ":1: error: code should be clang-formatted" }'
echo "check_format: the changed lines above are not formatted; scripts/check_format.sh --fix" \
  "--base $base rewrites them" >&2
exit 1
