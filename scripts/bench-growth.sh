#!/usr/bin/env bash
# bench-growth.sh gives the growth curves of issue 18 (docs/benchmarks.md):
# time and peak RSS against catalog size for whole-catalog validation
# (catalog-check vs opm, same run), a one-package pull request checked by the
# CLI in a fresh process (first without, then with the file summary index
# its cache directory keeps) and in process cold, indexed and warm (the App:
# index, parse cache and shared trees),
# and the image build (scripts/bench-image.sh, on the same catalogs).
#
#   scripts/bench-growth.sh [SOURCE_DIR...]
#
# Catalogs of SIZES MB are derived under $WORK from SOURCE_DIRs (default: the
# shared community catalogs) with scripts/derive-catalog; the pull request is
# BenchmarkCheckPR's (a new bundle on a new channel in one package, all
# checks but images), committed and packed under $WORK/pr-MB.
#
# Then synthetic bundle-dense catalogs of SYNTH bundles (catalogtest.Generate)
# are validated by both tools. Every catalog is also read by scripts/bench-read,
# the floor validation is held to: reading every file ("read"), and reading
# and decoding every document into generic values ("decode").
#
# Environment: SIZES="20 150 300 600", SYNTH="100000", WORK=/tmp/catalogbot-bench-image,
# OPM=$CATALOGBOT_TOOLS/bin/opm, SKIP_OPM=1 to leave opm out, SKIP_DECODE=1, SKIP_IMAGE=1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES-20 150 300 600}
WORK=${WORK:-/tmp/catalogbot-bench-image}
OPM=${OPM:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/opm}
[[ -x /usr/bin/time ]] || { echo "bench-growth: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
if [[ $# -eq 0 ]]; then
	set -- "$repo"/../shared/testdata/catalogs/community-operators-prod-v4.*
fi
mkdir -p "$WORK/bin"
(cd "$repo" && go build -o "$WORK/bin/" ./scripts/derive-catalog ./scripts/bench-read ./scripts/bench-warm-check ./cmd/catalog-check)
B=$WORK/bin

measure() { # prints "seconds MiB" of the command
	/usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/out" 2>&1 || true
	# GNU time puts "Command exited with non-zero status N" first when the
	# command fails (validate does on an invalid catalog): the figures are last.
	tail -n1 "$WORK/time" | awk '{printf "%s %.0f\n", $1, $2/1024}'
}

floor() { # prints "read-seconds decode-seconds" of bench-read on the catalog
	local rt dt=- x
	read -r rt x < <(measure "$B/bench-read" "$1")
	[[ -n ${SKIP_DECODE:-} ]] || read -r dt x < <(measure "$B/bench-read" -decode "$1")
	echo "$rt $dt"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
printf "%-5s %-18s %-18s %-14s %-18s %-18s %s\n" MB "validate" "opm validate" "read/decode" "PR CLI, no index" "PR CLI, indexed" "PR in process cold/indexed/warm (ms)"
for mb in $SIZES; do
	cat=$WORK/cat-$mb
	[[ -d $cat ]] || "$B/derive-catalog" -size "${mb}MB" -o "$cat" "$@" >/dev/null
	cat "$cat"/*/* >/dev/null
	read -r vt vr < <(measure "$B/catalog-check" validate "$cat")
	ot=- or=-
	if [[ -z ${SKIP_OPM:-} && -x $OPM ]]; then
		read -r ot or < <(measure "$OPM" validate "$cat")
	fi
	read -r rt dt < <(floor "$cat")
	rm -rf "$WORK/pr-$mb"
	(cd "$repo" && CHECKPR_CATALOG=$cat CHECKPR_REPO_DIR=$WORK/pr-$mb go test ./checks -run '^$' \
		-bench 'CheckPR/packages=1/(cold|indexed|warm)$' -benchtime 5x -v) >"$WORK/bench-$mb" 2>&1 || cat "$WORK/bench-$mb"
	cold=$(awk '/packages=1\/cold/ && /ns\/op/ {printf "%.0f", $3/1e6}' "$WORK/bench-$mb")
	indexed=$(awk '/packages=1\/indexed/ && /ns\/op/ {printf "%.1f", $3/1e6}' "$WORK/bench-$mb")
	warm=$(awk '/packages=1\/warm/ && /ns\/op/ {printf "%.1f", $3/1e6}' "$WORK/bench-$mb")
	line=$(grep -m1 -o 'repository .*packages=1_cold: --base [0-9a-f]* --head [0-9a-f]*' "$WORK/bench-$mb" || true)
	ct=- cr=- it=- ir=-
	if [[ -n $line ]]; then
		dir=$(sed 's/^repository \(.*\): --base.*/\1/' <<<"$line")
		base=$(sed 's/.*--base \([0-9a-f]*\).*/\1/' <<<"$line")
		head=$(sed 's/.*--head \([0-9a-f]*\).*/\1/' <<<"$line")
		# A fresh process twice: the first run has no file summary index (it
		# parses every file once to learn its packages), the second reads the
		# index the first wrote and only the touched packages' files.
		rm -rf "$WORK/cache-$mb"
		read -r ct cr < <(measure "$B/catalog-check" check --repo "$dir" --base "$base" --head "$head" --author bob \
			--checks ownership,validation,immutability,crd-safety --cache-dir "$WORK/cache-$mb")
		read -r it ir < <(measure "$B/catalog-check" check --repo "$dir" --base "$base" --head "$head" --author bob \
			--checks ownership,validation,immutability,crd-safety --cache-dir "$WORK/cache-$mb")
	fi
	# The App's warm check, 30 runs on the benchmark's warm repository: the median and the spread.
	wline=$(grep -m1 -o 'repository .*packages=1_warm: --base [0-9a-f]* --head [0-9a-f]*' "$WORK/bench-$mb" || true)
	if [[ -n $wline ]]; then
		"$B/bench-warm-check" -n 30 "$(sed 's/^repository \(.*\): --base.*/\1/' <<<"$wline")" \
			"$(sed 's/.*--base \([0-9a-f]*\).*/\1/' <<<"$wline")" "$(sed 's/.*--head \([0-9a-f]*\).*/\1/' <<<"$wline")" >"$WORK/warm-$mb" 2>&1 || true
	fi
	printf "%-5s %-18s %-18s %-14s %-18s %-18s %s\n" "$mb" "${vt}s ${vr}MiB" "${ot}s ${or}MiB" "${rt}s/${dt}s" "${ct}s ${cr}MiB" "${it}s ${ir}MiB" "${cold:-?} / ${indexed:-?} / ${warm:-?}"
	[[ ! -s $WORK/warm-$mb ]] || echo "      App warm check: $(cat "$WORK/warm-$mb")"
done
for n in ${SYNTH:-100000}; do # bundle-dense synthetic catalogs: validate only
	cat=$WORK/synth-$n
	[[ -d $cat ]] || "$B/derive-catalog" -synth "$n" -o "$cat"
	read -r vt vr < <(measure "$B/catalog-check" validate "$cat")
	ot=- or=-
	if [[ -z ${SKIP_OPM:-} && -x $OPM ]]; then
		read -r ot or < <(measure "$OPM" validate "$cat")
	fi
	read -r rt dt < <(floor "$cat")
	printf "%-5s %-18s %-18s %-14s\n" "${n}b" "${vt}s ${vr}MiB" "${ot}s ${or}MiB" "${rt}s/${dt}s"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z ${SKIP_IMAGE:-} ]]; then
	SIZES="$SIZES" WORK="$WORK" "$repo/scripts/bench-image.sh" "$@"
fi
