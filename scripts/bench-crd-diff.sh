#!/usr/bin/env bash
# Compares `catalog-check crd-diff` with crdify v0.6.0 on the same generated pair
# of large CRD files (16,000 lines each, two versions, deep nesting) and prints
# median wall time and peak RSS of each (runs alternate between the tools), and
# the ratios.
#
#   scripts/bench-crd-diff.sh            # RUNS=5 by default
#   CRDIFY=/path/to/crdify CATALOG_CHECK=/path/to/catalog-check RUNS=9 scripts/bench-crd-diff.sh
#
# Needs GNU time at /usr/bin/time (apt-get install time) and a crdify v0.6.0
# binary (scripts/build-reference-tools.sh builds it into $CATALOGBOT_TOOLS/bin).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
CRDIFY=${CRDIFY:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/crdify}
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

# sample OUT CMD... runs CMD once under GNU time and appends "seconds peak-KiB" to OUT.
sample() {
	local out=$1
	shift
	/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>&1 || true
	tail -n1 "$work/time" >>"$out"
}

# median COLUMN FILE prints the median of a column of samples.
median() {
	cut -d' ' -f"$1" "$2" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

old=$work/old.yaml new=$work/new.yaml
echo "pair: $(wc -l <"$old") + $(wc -l <"$new") lines, $(($(wc -c <"$old") + $(wc -c <"$new"))) bytes; $RUNS runs each, medians"
ours_rc=0 ref_rc=0
"$CATALOG_CHECK" crd-diff "$old" "$new" >/dev/null 2>&1 || ours_rc=$?
"$CRDIFY" "file://$old" "file://$new" >/dev/null 2>&1 || ref_rc=$?
# Alternate the two tools so that load from other work on the machine hits both alike.
: >"$work/ours" && : >"$work/ref"
for _ in $(seq "$RUNS"); do
	sample "$work/ours" "$CATALOG_CHECK" crd-diff "$old" "$new"
	sample "$work/ref" "$CRDIFY" "file://$old" "file://$new"
done
ours_s=$(median 1 "$work/ours") ours_k=$(median 2 "$work/ours")
ref_s=$(median 1 "$work/ref") ref_k=$(median 2 "$work/ref")
awk -v s="$ours_s" -v k="$ours_k" -v rc="$ours_rc" 'BEGIN { printf "%-24s %6.2f s %8.1f MiB  exit %s\n", "catalog-check crd-diff", s, k/1024, rc }'
awk -v s="$ref_s" -v k="$ref_k" -v rc="$ref_rc" 'BEGIN { printf "%-24s %6.2f s %8.1f MiB  exit %s\n", "crdify v0.6.0", s, k/1024, rc }'
awk -v os="$ours_s" -v rs="$ref_s" -v ok="$ours_k" -v rk="$ref_k" 'BEGIN {
	if (os < 0.01) os = 0.01
	printf "ratio: %.1fx faster (wall time crdify/ours), %.2fx the peak RSS (ours/crdify)\n", rs/os, ok/rk
}'
