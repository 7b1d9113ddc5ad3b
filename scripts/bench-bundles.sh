#!/usr/bin/env bash
# bench-bundles.sh measures reading, validating and rendering every bundle directory of a tree with
# catalogbot against opm (issue 19's benchmark), in one run:
#
#   catalogbot: `catalog-check bundle validate` over all directories (one process), then
#               `catalog-check bundle render` of each (one process per bundle, as a user runs it);
#   opm:        `opm render --use-http` of each bundle's image (built with catalogbot build-bundle and pushed
#               to a loopback registry first; the push is not timed), the reference for reading a bundle.
#
# It prints wall time and the largest peak RSS of each side, the ratio, and the load average.
#   scripts/bench-bundles.sh [BUNDLES_DIR]   (default ../shared/testdata/bundles)
# Environment: OPM=/work/tools/bin/opm, WORK=/tmp/catalogbot-bench-bundles.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$repo/../shared/testdata/bundles}
OPM=${OPM:-${CATALOGBOT_TOOLS:-/work/tools}/bin/opm}
WORK=${WORK:-/tmp/catalogbot-bench-bundles}
mkdir -p "$WORK/bin" "$WORK/home/.config/containers"
echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$WORK/home/.config/containers/policy.json"
(cd "$repo" && go build -o "$WORK/bin/" ./cmd/catalog-check ./cmd/catalogbot ./scripts/bench-image)
mapfile -t dirs < <(find "$root" -mindepth 3 -maxdepth 3 -name metadata -type d -printf '%h\n' | sort)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; ${#dirs[@]} bundle directories"

# A loopback registry (go-containerregistry's, the one bench-image uses).
mkdir -p "$WORK/blobs"
"$WORK/bin/bench-image" registry -dir "$WORK/blobs" >"$WORK/registry.addr" 2>/dev/null &
regpid=$!
trap 'kill $regpid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $WORK/registry.addr ]] && break; sleep 0.1; done
host=$(cat "$WORK/registry.addr")
refs=()
for d in "${dirs[@]}"; do
	ref="$host/bundles/$(basename "$(dirname "$d")"):$(basename "$d" | tr '+' '_')"
	"$WORK/bin/catalogbot" build-bundle "$d" --push "$ref" --insecure-registry "$host" >/dev/null
	refs+=("$ref")
done

measure() { # runs the command list from stdin with bash, prints "seconds maxRSS_MiB"
	/usr/bin/time -f "%e %M" -o "$WORK/time" bash "$1" >/dev/null 2>&1 || true
	awk '{printf "%s %.0f\n", $1, $2/1024}' "$WORK/time"
}
{
	printf '%q bundle validate' "$WORK/bin/catalog-check"
	printf ' %q' "${dirs[@]}"
	echo
	for d in "${dirs[@]}"; do printf '%q bundle render %q --image x.example.com/b:v1\n' "$WORK/bin/catalog-check" "$d"; done
} >"$WORK/ours.sh"
for r in "${refs[@]}"; do printf 'HOME=%q %q render --use-http %q -o json\n' "$WORK/home" "$OPM" "$r"; done >"$WORK/opm.sh"
read -r ot or < <(measure "$WORK/opm.sh")
read -r ct cr < <(measure "$WORK/ours.sh")
echo "catalogbot (validate all + render each): ${ct}s, ${cr} MiB peak RSS"
echo "opm render of each image:                ${ot}s, ${or} MiB peak RSS"
awk -v c="$ct" -v o="$ot" 'BEGIN { if (c > 0) printf "opm / catalogbot: %.1f× the time\n", o / c }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
