#!/usr/bin/env bash
# bench-image.sh measures the catalog image build and push (issue 18, item 3)
# on derived catalogs of 20, 150, 300 and 600 MB, against `tar | pigz -1` of
# the same directory and `catalog-check validate` in the same run:
#
#   scripts/bench-image.sh [SOURCE_DIR...]
#
# SOURCE_DIRs are catalogs of one directory per package (default: the shared
# community catalogs; add e.g. catalogs/v4.* of community-operators-prod for
# more variety). The catalogs are derived under $WORK (default
# /tmp/catalogbot-bench-image) with scripts/derive-catalog, never in the repo.
# The registry (go-containerregistry's, blobs on disk) runs in its own process
# so that its memory is not counted.
#
# Columns: validate = catalog-check validate; build = catalogbot build --push
# (validation, then build and push of two platforms); first/unchanged = build
# and push alone, the second time with the layer cache of an unchanged tree;
# re-push = the same catalogbot build again, unchanged, with the layer cache the first build left in its
# --cache-dir (no file read: listing, stats, existence checks; issue 33.4);
# pigz = tar -cf - . | pigz -1 >/dev/null. Times in seconds, RSS in MiB.
# The last column is the build's RSS beyond the validation's, each binary's
# own idle RSS (its `version`) taken out first: catalogbot links the whole
# App and idles about 15 MiB above catalog-check, which is not the build's.
#
# build and re-push are medians of REPEATS pairs (a first build into an emptied --cache-dir, then the same
# build again); the last line gives re-push / build and the build's RSS above catalogbot's idle RSS against
# the catalog's size (issue 33.4's goals: < 0.1x and <= 0.5x).
#
# Environment: SIZES="20 150 300 600" (MB), WORK=dir, REPEATS=3. Needs /usr/bin/time and pigz.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES:-20 150 300 600}
WORK=${WORK:-/tmp/catalogbot-bench-image}
REPEATS=${REPEATS:-3}
[[ -x /usr/bin/time ]] || { echo "bench-image: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
command -v pigz >/dev/null || { echo "bench-image: pigz missing (apt-get install pigz)" >&2; exit 2; }
if [[ $# -eq 0 ]]; then
	set -- "$repo"/../shared/testdata/catalogs/community-operators-prod-v4.*
fi
mkdir -p "$WORK/bin"
(cd "$repo" && go build -o "$WORK/bin/" ./scripts/derive-catalog ./scripts/bench-image ./cmd/catalog-check ./cmd/catalogbot)
B=$WORK/bin

rm -rf "$WORK/blobs" && mkdir -p "$WORK/blobs"
"$B/bench-image" registry -dir "$WORK/blobs" >"$WORK/registry.addr" &
reg=$!
trap 'kill $reg 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $WORK/registry.addr ]] && break; sleep 0.1; done
host=$(cat "$WORK/registry.addr")
base=$("$B/bench-image" base -registry "$host")

measure() { # prints "seconds MiB" of the command (wall time to the millisecond: GNU time's %e has 10 ms steps)
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f "%M" -o "$WORK/time" "$@" >"$WORK/out" 2>&1 || true
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) '{printf "%.3f %.0f\n", ns / 1e9, $NF/1024}' "$WORK/time"
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
read -r _ idle_cb < <(measure "$B/catalogbot" version)
read -r _ idle_cc < <(measure "$B/catalog-check" version)
echo "idle RSS: catalogbot ${idle_cb} MiB, catalog-check ${idle_cc} MiB"
printf "%-6s %-16s %-16s %-16s %-10s %-10s %-8s %s\n" MB validate build re-push first unchanged pigz "build RSS - validate RSS (net of idle)"
for mb in $SIZES; do
	cat=$WORK/cat-$mb
	# (a catalog written less than 2 s ago is not trusted by the layer cache: its files may still change
	# within their time stamps)
	[[ -d $cat ]] || { "$B/derive-catalog" -size "${mb}MB" -o "$cat" "$@" >/dev/null && sleep 2; }
	cat "$cat"/*/* >/dev/null # warm the page cache alike for every tool
	read -r vt vr < <(measure "$B/catalog-check" validate "$cat")
	: >"$WORK/builds"
	for _ in $(seq "$REPEATS"); do # a first build (empty cache) and an unchanged re-push, REPEATS times: medians
		rm -rf "$WORK/layers-$mb"
		read -r bt br < <(measure "$B/catalogbot" build --catalog "$cat" --base-image "$base" --push "$host/acme/cli-$mb:latest" --insecure-registry "$host" --cache-dir "$WORK/layers-$mb")
		grep -q '^pushed' "$WORK/out" || { echo "catalogbot build failed:"; cat "$WORK/out"; }
		read -r rt rr < <(measure "$B/catalogbot" build --catalog "$cat" --base-image "$base" --push "$host/acme/cli-$mb:latest" --insecure-registry "$host" --cache-dir "$WORK/layers-$mb")
		grep -q 'from the cache' "$WORK/out" || { echo "catalogbot build again did not use its layer cache:"; cat "$WORK/out"; }
		echo "$bt $br $rt $rr" >>"$WORK/builds"
	done
	bt=$(awk '{print $1}' "$WORK/builds" | median); br=$(awk '{print $2}' "$WORK/builds" | median)
	rt=$(awk '{print $3}' "$WORK/builds" | median); rr=$(awk '{print $4}' "$WORK/builds" | median)
	"$B/bench-image" run -registry "$host" -catalog "$cat" >"$WORK/run" 2>&1 || cat "$WORK/run"
	first=$(awk '$1=="first"{print $2}' "$WORK/run")
	unchanged=$(awk '$1=="unchanged"{print $2}' "$WORK/run")
	read -r pt _ < <(measure sh -c "tar -C '$cat' -cf - . | pigz -1 >/dev/null")
	printf "%-6s %-16s %-16s %-16s %-10s %-10s %-8s %s\n" "$mb" "${vt}s ${vr}MiB" "${bt}s ${br}MiB" "${rt}s ${rr}MiB" "$first" "$unchanged" "$pt" "$((br - vr)) MiB ($(((br - idle_cb) - (vr - idle_cc))) MiB)"
	size=$(du -sbL "$cat" | awk '{print $1}')
	awk -v b="$bt" -v r="$rt" -v br="$br" -v idle="$idle_cb" -v size="$size" -v mb="$mb" 'BEGIN {printf "       %s MB: re-push / build %.3fx; build RSS above idle %d MiB = %.2fx the catalog (%.1f MB)\n", mb, r / b, br - idle, (br - idle) * 1048576 / size, size / 1e6}' 
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
