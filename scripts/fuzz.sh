#!/usr/bin/env bash
# Runs every Go fuzz target for a while (FUZZTIME, default 5s) beyond its
# seed corpus, which `go test` already runs. A crasher is written to the
# package's testdata/fuzz/FuzzXxx/ and fails this script: fix the bug and
# commit the file, so that the case stays in the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
mapfile -t files < <(grep -rl --include='*_test.go' '^func Fuzz' internal || true)
for file in "${files[@]}"; do
  pkg="./$(dirname "$file")"
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
    echo "fuzz: $pkg $target ($fuzztime)"
    # Quiet when it passes; the failing input and the test's message
    # when it does not, so that CI's log names the case.
    if ! out="$(go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s 2>&1)"; then
      printf '%s\n' "$out" | grep -v '^fuzz: elapsed' | tail -40
      exit 1
    fi
  done
done
