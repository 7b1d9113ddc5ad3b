#!/usr/bin/env bash
# Compares `catalog-check crd-diff` with crdify v0.6.0 on the same generated pair
# of large CRD files (16,000 lines each, two versions, deep nesting) and prints
# median wall time and peak RSS of each, and the ratios.
#
#   scripts/bench-crd-diff.sh            # RUNS=5 by default
#   CRDIFY=/path/to/crdify CATALOG_CHECK=/path/to/catalog-check RUNS=9 scripts/bench-crd-diff.sh
#
# Needs GNU time at /usr/bin/time (apt-get install time) and a crdify v0.6.0
# binary (scripts/build-reference-tools.sh builds it into /work/tools/bin).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
CRDIFY=${CRDIFY:-/work/tools/bin/crdify}
RUNS=${RUNS:-5}

[ -x /usr/bin/time ] || { echo "bench-crd-diff: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
[ -x "$CRDIFY" ] || { echo "bench-crd-diff: crdify not found at $CRDIFY (set CRDIFY)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$repo" && go test ./catalog/crd -run '^TestGenerateBenchPair$' -count=1 -crd.genpair="$work" >/dev/null)
if [ -z "${CATALOG_CHECK:-}" ]; then
	(cd "$repo" && go build -o "$work/catalog-check" ./cmd/catalog-check)
	CATALOG_CHECK=$work/catalog-check
fi

# measure NAME CMD... runs CMD $RUNS times (after one warm-up) and prints
# "median-seconds median-peak-KiB exit-code".
measure() {
	local rc=0
	"$@" >/dev/null 2>&1 || rc=$?
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>&1 || true
		tail -n1 "$work/time"
	done >"$work/samples"
	local secs kib
	secs=$(cut -d' ' -f1 "$work/samples" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	kib=$(cut -d' ' -f2 "$work/samples" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	echo "$secs $kib $rc"
}

old=$work/old.yaml new=$work/new.yaml
echo "pair: $(wc -l <"$old") + $(wc -l <"$new") lines, $(($(wc -c <"$old") + $(wc -c <"$new"))) bytes; $RUNS runs each, medians"
read -r ours_s ours_k ours_rc < <(measure "$CATALOG_CHECK" crd-diff "$old" "$new")
read -r ref_s ref_k ref_rc < <(measure "$CRDIFY" "file://$old" "file://$new")
awk -v s="$ours_s" -v k="$ours_k" -v rc="$ours_rc" 'BEGIN { printf "%-24s %6.2f s %8.1f MiB  exit %s\n", "catalog-check crd-diff", s, k/1024, rc }'
awk -v s="$ref_s" -v k="$ref_k" -v rc="$ref_rc" 'BEGIN { printf "%-24s %6.2f s %8.1f MiB  exit %s\n", "crdify v0.6.0", s, k/1024, rc }'
awk -v os="$ours_s" -v rs="$ref_s" -v ok="$ours_k" -v rk="$ref_k" 'BEGIN {
	if (os < 0.01) os = 0.01
	printf "ratio: %.1fx faster (wall time crdify/ours), %.2fx the peak RSS (ours/crdify)\n", rs/os, ok/rk
}'
