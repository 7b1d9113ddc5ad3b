#!/usr/bin/env bash
# bench-validate.sh compares `catalog-check validate` with the reference
# `opm validate` (v1.60.0) on whole catalogs: median wall time, peak RSS and
# the ratios, after checking that both give the same verdict.
#
#   scripts/bench-validate.sh [DIR...]
#
# DIR defaults to the two real community catalogs in
# ../shared/testdata/catalogs (relative to the repository root). Each DIR is
# validated RUNS times by each tool (after one untimed warm-up run each),
# alternating opm and catalog-check so that load from other processes hits
# both alike. Wall time is the median of the runs; peak RSS is the largest
# maximum resident set size seen over the runs.
#
# Environment:
#   RUNS=5            runs per tool and catalog
#   OPM=path          opm binary (default ${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/opm,
#                     built by scripts/build-reference-tools.sh)
#   CATALOG_CHECK=path  use this catalog-check instead of building one
#   OPM_ONLY=1        time opm alone (no catalog-check build or runs)
#
# Needs GNU time at /usr/bin/time (Debian package "time").
# Exit status: 0 when every verdict agrees, 1 when one differs, 2 when a tool
# could not run. Record figures in docs/benchmarks.md.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5}
OPM=${OPM:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/opm}
OPM_ONLY=${OPM_ONLY:-0}

die() {
	echo "bench-validate: $*" >&2
	exit 2
}

[[ -x /usr/bin/time ]] || die "/usr/bin/time missing (apt-get install time)"
[[ -x "$OPM" ]] || die "opm not found at $OPM (run scripts/build-reference-tools.sh or set OPM)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, not $RUNS"

if [[ $# -gt 0 ]]; then
	dirs=("$@")
else
	shared="$repo/../shared/testdata/catalogs"
	dirs=("$shared/community-operators-prod-v4.21" "$shared/community-operators-prod-v4.16")
fi
for d in "${dirs[@]}"; do
	[[ -d "$d" ]] || die "$d is not a directory"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ "$OPM_ONLY" != 1 && -z "${CATALOG_CHECK:-}" ]]; then
	(cd "$repo" && go build -o "$work/catalog-check" ./cmd/catalog-check) || die "building catalog-check failed"
	CATALOG_CHECK=$work/catalog-check
fi

# run_once LABEL CMD... runs CMD under GNU time and appends
# "seconds peak-KiB exit" to $work/LABEL.
run_once() {
	local label=$1 rc=0
	shift
	/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || rc=$?
	# GNU time writes "Command exited with non-zero status N" before the figures.
	echo "$(tail -n 1 "$work/time") $rc" >>"$work/$label"
}

# median FILE COLUMN prints the median of a column.
median() {
	cut -d' ' -f"$2" "$1" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# maximum FILE COLUMN prints the largest value of a column.
maximum() {
	cut -d' ' -f"$2" "$1" | sort -g | tail -n 1
}

# verdict FILE prints valid, invalid or "could-not-run" from the exit codes,
# or "mixed" when runs disagree.
verdict() {
	local codes
	codes=$(cut -d' ' -f3 "$1" | sort -u)
	case "$codes" in
	0) echo valid ;;
	1) echo invalid ;;
	*[!0-9]* | "") echo mixed ;;
	*) if [[ $(wc -l <<<"$codes") -gt 1 ]]; then echo mixed; else echo could-not-run; fi ;;
	esac
}

status=0
printf '%-36s %-14s %9s %10s %-8s\n' catalog tool "median s" "peak MiB" verdict
for d in "${dirs[@]}"; do
	name=$(basename "$d")
	rm -f "$work/opm" "$work/ours"
	"$OPM" validate "$d" >/dev/null 2>&1 || true
	if [[ "$OPM_ONLY" != 1 ]]; then
		"$CATALOG_CHECK" validate -q "$d" >/dev/null 2>&1 || true
	fi
	for _ in $(seq "$RUNS"); do
		run_once opm "$OPM" validate "$d"
		if [[ "$OPM_ONLY" != 1 ]]; then
			run_once ours "$CATALOG_CHECK" validate -q "$d"
		fi
	done
	opm_s=$(median "$work/opm" 1)
	opm_k=$(maximum "$work/opm" 2)
	opm_v=$(verdict "$work/opm")
	printf '%-36s %-14s %9.2f %10.1f %-8s\n' "$name" "opm v1.60.0" "$opm_s" "$(awk -v k="$opm_k" 'BEGIN {print k / 1024}')" "$opm_v"
	[[ "$opm_v" == valid || "$opm_v" == invalid ]] || status=2
	if [[ "$OPM_ONLY" == 1 ]]; then
		continue
	fi
	ours_s=$(median "$work/ours" 1)
	ours_k=$(maximum "$work/ours" 2)
	ours_v=$(verdict "$work/ours")
	printf '%-36s %-14s %9.2f %10.1f %-8s\n' "" "catalog-check" "$ours_s" "$(awk -v k="$ours_k" 'BEGIN {print k / 1024}')" "$ours_v"
	awk -v os="$opm_s" -v us="$ours_s" -v ok="$opm_k" -v uk="$ours_k" 'BEGIN {
		if (us < 0.01) us = 0.01
		printf "%-36s speed opm/ours %.1fx, peak RSS ours/opm %.2fx\n", "", os / us, uk / ok
	}'
	if [[ "$ours_v" != valid && "$ours_v" != invalid ]]; then
		status=2
	elif [[ "$ours_v" != "$opm_v" ]]; then
		echo "bench-validate: $name: verdicts differ (opm $opm_v, catalog-check $ours_v)" >&2
		[[ $status -eq 2 ]] || status=1
	fi
done
echo "($RUNS runs each after a warm-up; wall time median, peak RSS maximum over runs; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
exit "$status"
