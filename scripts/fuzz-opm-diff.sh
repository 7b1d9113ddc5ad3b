#!/usr/bin/env bash
# fuzz-opm-diff.sh fuzzes catalogbot's catalog reader against opm's own loader
# (operator-registry v1.60.0's declcfg, the code behind `opm validate`) for as
# long as you like: test/opmdiff's FuzzAgainstOpm feeds the same bytes to both
# and fails when one accepts what the other refuses, or when both accept and
# the blobs differ. .ci/run runs it for a few seconds; this is the long run.
#
# A disagreement is saved under test/opmdiff/testdata/fuzz/FuzzAgainstOpm/;
# once understood, fix the reader (or, for a deliberate difference, document
# it in docs/rules.md and teach deliberate() in test/opmdiff) and keep the
# input as a seed.
#
# Usage: scripts/fuzz-opm-diff.sh [DURATION]   (default 10m; Go's -fuzztime syntax)
set -euo pipefail
cd "$(dirname "$0")/../test/opmdiff"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
go test -run='^$' -fuzz='^FuzzAgainstOpm$' -fuzztime="${1:-10m}" . 2>&1 | tee /tmp/fuzz-opm-diff.log | grep -v '^fuzz: elapsed' || true
grep '^fuzz: elapsed' /tmp/fuzz-opm-diff.log | tail -n 1
