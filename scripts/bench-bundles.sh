#!/usr/bin/env bash
# bench-bundles.sh measures reading, validating and rendering every bundle directory of a tree with
# catalogbot against the reference tools (issue 19's benchmark), in one run:
#
#   reference:  `opm render --use-http` of each bundle's image (built with catalogbot build-bundle and pushed
#               to a loopback registry first; the push is not timed), the reference for reading and rendering
#               a bundle; and `apivalidate` over all directories (one process): a small program over
#               operator-framework/api's default bundle validators (what operator-sdk bundle validate runs),
#               written and built by this script under $WORK, outside the repository, with the module
#               versions of test/opmdiff;
#   catalogbot: `catalog-check bundle validate` over all directories (one process), then
#               `catalog-check bundle render` of each (one process per bundle, as a user runs it); and the same
#               work in process (BenchmarkLoadAndRenderRealBundles of catalog/bundle).
#   per item:   (issue 33.3) `catalog-check bundle validate DIR` and `catalog-check bundle render DIR` one process
#               per directory, each against `opm render` of each image, and `catalog-check version` as many
#               times: the start-up every process pays, the floor of the per-item figures.
#
# It prints wall time and peak RSS of each (the fastest of ROUNDS rounds), the ratios, whether both validators give the same verdict on every
# directory, and the load average before and after.
#   scripts/bench-bundles.sh [BUNDLES_DIR]   (default ../shared/testdata/bundles)
# Environment: OPM=$CATALOGBOT_TOOLS/bin/opm, WORK=/tmp/catalogbot-bench-bundles, BENCHTIME=10x (in process),
# ROUNDS=3 (each side's fastest round counts).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$repo/../shared/testdata/bundles}
[[ -d $src ]] || { echo "bench-bundles: $src is not a directory (give a tree of <package>/<version>/ bundle directories; the default is the shared test data's)" >&2; exit 2; }
root=$(cd "$src" && pwd)
OPM=${OPM:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/opm}
# What the measurement needs, checked before anything is built.
[[ -x /usr/bin/time ]] || { echo "bench-bundles: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
[[ -x $OPM ]] || { echo "bench-bundles: opm not found at $OPM (set OPM, or run scripts/build-reference-tools.sh)" >&2; exit 2; }
WORK=${WORK:-/tmp/catalogbot-bench-bundles}
BENCHTIME=${BENCHTIME:-10x}
ROUNDS=${ROUNDS:-3}
mkdir -p "$WORK/bin" "$WORK/home/.config/containers" "$WORK/apivalidate"
echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$WORK/home/.config/containers/policy.json"
(cd "$repo" && go build -o "$WORK/bin/" ./cmd/catalog-check ./cmd/catalogbot ./scripts/bench-image)
(cd "$repo" && go test -c -o "$WORK/bin/bundle.test" ./catalog/bundle)

# The api validators' program: module versions of test/opmdiff (operator-framework/api), nothing of ours.
sed -e 's|^module .*|module apivalidate|' -e '/catalogbot\/catalogbot/d' "$repo/test/opmdiff/go.mod" >"$WORK/apivalidate/go.mod.new"
cp "$repo/test/opmdiff/go.sum" "$WORK/apivalidate/go.sum.new"
cat >"$WORK/apivalidate/main.go.new" <<'EOF'
// Command apivalidate reads each bundle directory as operator-sdk bundle validate does (operator-framework/api's
// manifests package) and runs that library's default bundle validators on it: one verdict line a directory.
// Exit 0: all valid; 1: one is invalid; 2: a directory could not be read.
package main

import (
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
)

func main() {
	code := 0
	for _, dir := range os.Args[1:] {
		b, err := manifests.GetBundleFromDir(dir)
		if err != nil {
			fmt.Printf("%s: invalid (unreadable: %v)\n", dir, err)
			code = 2
			continue
		}
		errs := 0
		for _, r := range validation.DefaultBundleValidators.Validate(b.ObjectsToValidate()...) {
			errs += len(r.Errors)
		}
		verdict := "valid"
		if errs > 0 {
			verdict = "invalid"
			code = max(code, 1)
		}
		fmt.Printf("%s: %s (%d errors)\n", dir, verdict, errs)
	}
	os.Exit(code)
}
EOF
for f in go.mod go.sum main.go; do
	cmp -s "$WORK/apivalidate/$f.new" "$WORK/apivalidate/$f" || mv "$WORK/apivalidate/$f.new" "$WORK/apivalidate/$f"
	rm -f "$WORK/apivalidate/$f.new"
done
if [[ ! -x $WORK/bin/apivalidate || $WORK/apivalidate/main.go -nt $WORK/bin/apivalidate || $WORK/apivalidate/go.mod -nt $WORK/bin/apivalidate ]]; then
	echo "building apivalidate (operator-framework/api; takes a minute the first time)"
	(cd "$WORK/apivalidate" && GOFLAGS=-mod=mod GOWORK=off go build -o "$WORK/bin/apivalidate" .)
fi

mapfile -t dirs < <(find "$root" -mindepth 3 -maxdepth 3 -name metadata -type d -printf '%h\n' | sort)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; ${#dirs[@]} bundle directories"

# A loopback registry (go-containerregistry's, the one bench-image uses).
mkdir -p "$WORK/blobs"
rm -f "$WORK/registry.addr"
"$WORK/bin/bench-image" registry -dir "$WORK/blobs" >"$WORK/registry.addr" 2>/dev/null &
regpid=$!
trap 'kill $regpid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $WORK/registry.addr ]] && break; sleep 0.1; done
host=$(cat "$WORK/registry.addr")
refs=()
for d in "${dirs[@]}"; do
	ref="$host/bundles/$(basename "$(dirname "$d")"):$(basename "$d" | tr '+' '_')"
	# build-bundle refuses a bundle catalog-check finds invalid: opm renders the images of the others.
	if "$WORK/bin/catalogbot" build-bundle "$d" --push "$ref" --insecure-registry "$host" >/dev/null 2>"$WORK/build.err"; then
		refs+=("$ref")
	fi
done

measure() { # runs a command list with bash, prints "seconds maxRSS_MiB"
	/usr/bin/time -f "%e %M" -o "$WORK/time" bash "$1" >"$WORK/out.$(basename "$1" .sh)" 2>&1 || true
	# time writes "Command exited with non-zero status N" first when the command fails (an invalid bundle).
	tail -n 1 "$WORK/time" | awk '{printf "%s %.0f\n", $1, $2/1024}'
}
{
	printf '%q bundle validate' "$WORK/bin/catalog-check"
	printf ' %q' "${dirs[@]}"
	printf ' >%q\n' "$WORK/ours-validate.txt"
	for d in "${dirs[@]}"; do printf '%q bundle render %q --image x.example.com/b:v1\n' "$WORK/bin/catalog-check" "$d"; done
} >"$WORK/ours.sh"
for r in "${refs[@]}"; do printf 'HOME=%q %q render --use-http %q -o json\n' "$WORK/home" "$OPM" "$r"; done >"$WORK/opm.sh"
{
	printf '%q' "$WORK/bin/apivalidate"
	printf ' %q' "${dirs[@]}"
	echo
} >"$WORK/api.sh"
for d in "${dirs[@]}"; do printf '%q bundle validate %q\n' "$WORK/bin/catalog-check" "$d"; done >"$WORK/validate-each.sh"
for d in "${dirs[@]}"; do printf '%q bundle render %q --image x.example.com/b:v1\n' "$WORK/bin/catalog-check" "$d"; done >"$WORK/render-each.sh"
for d in "${dirs[@]}"; do printf '%q version\n' "$WORK/bin/catalog-check"; done >"$WORK/version-each.sh"
printf 'cd %q && CATALOGBOT_BUNDLES=%q %q -test.run %q -test.bench %q -test.benchtime %s\n' \
	"$repo/catalog/bundle" "$root" "$WORK/bin/bundle.test" '^$' '^BenchmarkLoadAndRenderRealBundles$' "$BENCHTIME" >"$WORK/inproc.sh"

# ROUNDS rounds, the sides taking turns; each side's fastest round counts (the one least disturbed by whatever
# else the machine runs), with its peak RSS.
best() { # "t r" lines → the line of the least t
	sort -g | head -n 1
}
: >"$WORK/rounds.opm"; : >"$WORK/rounds.api"; : >"$WORK/rounds.ours"; : >"$WORK/rounds.inproc"
: >"$WORK/rounds.validate-each"; : >"$WORK/rounds.render-each"; : >"$WORK/rounds.version-each"
for round in $(seq "$ROUNDS"); do
	measure "$WORK/opm.sh" >>"$WORK/rounds.opm"
	measure "$WORK/api.sh" >>"$WORK/rounds.api"
	measure "$WORK/ours.sh" >>"$WORK/rounds.ours"
	measure "$WORK/validate-each.sh" >>"$WORK/rounds.validate-each"
	measure "$WORK/render-each.sh" >>"$WORK/rounds.render-each"
	measure "$WORK/version-each.sh" >>"$WORK/rounds.version-each"
	read -r _ ir < <(measure "$WORK/inproc.sh")
	ims=$(grep -o '[0-9.]* ms/bundle' "$WORK/out.inproc" | cut -d' ' -f1)
	awk -v m="$ims" -v n="${#dirs[@]}" -v r="$ir" 'BEGIN { printf "%.3f %s\n", m * n / 1000, r }' >>"$WORK/rounds.inproc"
	echo "round $round: opm $(tail -n1 "$WORK/rounds.opm" | cut -d' ' -f1)s, apivalidate $(tail -n1 "$WORK/rounds.api" | cut -d' ' -f1)s, catalog-check $(tail -n1 "$WORK/rounds.ours" | cut -d' ' -f1)s, in process $(tail -n1 "$WORK/rounds.inproc" | cut -d' ' -f1)s; load $(cut -d' ' -f1 /proc/loadavg)"
done
read -r ot or < <(best <"$WORK/rounds.opm")
read -r at ar < <(best <"$WORK/rounds.api")
read -r ct cr < <(best <"$WORK/rounds.ours")
read -r it ir < <(best <"$WORK/rounds.inproc")
read -r vt vr < <(best <"$WORK/rounds.validate-each")
read -r rdt rdr < <(best <"$WORK/rounds.render-each")
read -r st sr < <(best <"$WORK/rounds.version-each")
ims=$(awk -v t="$it" -v n="${#dirs[@]}" 'BEGIN { printf "%.3f", t * 1000 / n }')

# Verdicts: catalog-check's "valid" against apivalidate's, directory by directory.
sed -nE 's/^(.*): (valid|INVALID): package .*/\1 \2/p' "$WORK/ours-validate.txt" | tr 'A-Z' 'a-z' | sort >"$WORK/ours.verdicts"
sed -nE 's/^(.*): (valid|invalid) \(.*/\1 \2/p' "$WORK/out.api" | sort >"$WORK/api.verdicts"
same=$(join "$WORK/ours.verdicts" "$WORK/api.verdicts" | awk '$2 == $3' | wc -l)
invalid=$(grep -c ' invalid$' "$WORK/ours.verdicts" || true)

rt=$(awk -v a="$ot" -v b="$at" 'BEGIN { printf "%.2f", a + b }')
rr=$((or > ar ? or : ar))
echo "opm render of each image:                        ${ot}s, ${or} MiB peak RSS"
echo "apivalidate of all directories:                  ${at}s, ${ar} MiB peak RSS"
echo "reference tools together:                        ${rt}s, ${rr} MiB peak RSS"
echo "catalog-check (validate all + render each):      ${ct}s, ${cr} MiB peak RSS"
echo "in process (load + validate + render, ${BENCHTIME}):    ${it}s a pass (${ims} ms a bundle), ${ir} MiB peak RSS (test binary)"
echo "verdicts: ${same} of ${#dirs[@]} directories the same (${invalid} invalid for catalogbot)"
awk -v r="$rt" -v o="$ot" -v c="$ct" -v i="$it" -v rr="$rr" -v cr="$cr" 'BEGIN {
	if (c > 0) printf "reference / catalog-check CLI: %.1f× the time, %.1f× the peak RSS\n", r / c, rr / cr
	if (i > 0) printf "reference / in process:        %.1f× the time (opm alone: %.1f×)\n", r / i, o / i
}'
n=${#dirs[@]}
awk -v o="$ot" -v v="$vt" -v r="$rdt" -v s="$st" -v n="$n" -v on="${#refs[@]}" -v vr="$vr" -v rr="$rdr" -v sr="$sr" 'BEGIN {
	o = o * n / on # opm renders the images of the bundles build-bundle built: its time an item, over n
	printf "per item, one process each (%d; opm: the %d built images): opm render %.1f ms an item\n", n, on, o * 1000 / n
	printf "  catalog-check bundle validate DIR: %.1f ms an item, %s MiB peak: opm / ours %.1f×\n", v * 1000 / n, vr, (v > 0 ? o / v : 0)
	printf "  catalog-check bundle render DIR:   %.1f ms an item, %s MiB peak: opm / ours %.1f×\n", r * 1000 / n, rr, (r > 0 ? o / r : 0)
	printf "  catalog-check version (start-up):  %.1f ms a process, %s MiB peak: opm render / start-up %.1f× (the ceiling of both ratios)\n", s * 1000 / n, sr, (s > 0 ? o / s : 0)
}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
