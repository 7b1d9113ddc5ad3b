#!/usr/bin/env bash
# record-opm-golden.sh records what the reference opm (v1.60.0) says about each
# case of the opm differential corpus, testdata/opm-parity/cases/<case>/.
#
# For every case it runs `opm validate catalog` from inside the case directory
# and writes <case>/opm.golden:
#
#   line 1   "exit N", opm's exit code (0 valid, 1 invalid);
#   rest     opm's stderr, with the logrus timestamp replaced by
#            time="<time>" and any absolute path of the case directory
#            replaced by "<case>", so goldens do not depend on the machine.
#
# opm prints several model errors in map order, so the order of the lines of
# its error tree changes from run to run; a golden whose content differs only
# in that order is left as it is, so re-recording does not churn.
#
# catalog/opm_parity_test.go compares catalogbot's verdict and findings with
# these files. A case that also has <case>/expect ("valid" or "invalid" and a
# reason) marks a place where catalogbot deliberately differs from opm v1.60.0;
# the test uses that verdict instead, but the golden is still recorded.
#
# With OPM_NEWER=/path/to/newer/opm (scripts/build-reference-tools.sh builds
# one with OPM_NEWER=v1.69.0), each case that has an expect file also gets
# <case>/opm-newer.golden in the same format plus a "# opm vX" line 2. The
# test checks that expect files citing newer opm agree with it.
#
# Build opm first with scripts/build-reference-tools.sh.
#
# Usage: scripts/record-opm-golden.sh [case-name...]   (default: every case)
#   OPM=/path/to/opm overrides the v1.60.0 binary.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cases="$repo/testdata/opm-parity/cases"
OPM=${OPM:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/opm}
OPM_NEWER=${OPM_NEWER:-}

# opm_version BINARY prints the opmVersion an opm binary reports.
opm_version() {
	"$1" version 2>&1 | sed -n 's/.*OpmVersion:"\([^"]*\)".*/\1/p'
}

if [[ ! -x "$OPM" ]]; then
	echo "record-opm-golden: $OPM not found; run scripts/build-reference-tools.sh" >&2
	exit 2
fi
if [[ "$(opm_version "$OPM")" != v1.60.0 ]]; then
	echo "record-opm-golden: want opm v1.60.0 at $OPM, got: $("$OPM" version 2>&1 | head -n 1)" >&2
	exit 2
fi
newer_version=
if [[ -n "$OPM_NEWER" ]]; then
	[[ -x "$OPM_NEWER" ]] || { echo "record-opm-golden: OPM_NEWER=$OPM_NEWER is not executable" >&2; exit 2; }
	newer_version=$(opm_version "$OPM_NEWER")
	[[ -n "$newer_version" ]] || { echo "record-opm-golden: $OPM_NEWER reports no version" >&2; exit 2; }
fi

if [[ $# -gt 0 ]]; then
	names=("$@")
else
	names=()
	for d in "$cases"/*/; do
		names+=("$(basename "$d")")
	done
fi

# canon prints a golden with its error tree flattened to sorted lines without
# tree drawing, so two recordings that differ only in order compare equal.
canon() {
	sed -e 's/\\n/\n/g' "$1" | sed -e 's/[│├└─ ]//g' -e 's/"$//' | LC_ALL=C sort
}

# record BINARY DIR GOLDEN [HEADER] runs BINARY validate on DIR/catalog and
# writes DIR/GOLDEN (unless only the order of opm's lines changed). It prints
# opm's exit code.
record() {
	local bin=$1 dir=$2 golden=$3 header=${4:-} stderr code
	set +e
	stderr=$(cd "$dir" && timeout 60 "$bin" validate catalog 2>&1 >/dev/null)
	code=$?
	set -e
	if [[ $code -eq 124 ]]; then
		echo "record-opm-golden: $bin timed out on $dir" >&2
		exit 2
	fi
	{
		echo "exit $code"
		[[ -z "$header" ]] || echo "$header"
		if [[ -n "$stderr" ]]; then
			printf '%s\n' "$stderr" |
				sed -E -e 's/time="[^"]*"/time="<time>"/g' \
					-e "s#$(printf '%s' "$dir" | sed 's/[.[\*^$#]/\\&/g')#<case>#g"
		fi
	} >"$dir/$golden.new"
	if [[ -f "$dir/$golden" ]] && cmp -s <(canon "$dir/$golden") <(canon "$dir/$golden.new"); then
		rm "$dir/$golden.new"
	else
		mv "$dir/$golden.new" "$dir/$golden"
	fi
	echo "$code"
}

valid=0 invalid=0 newer=0
for name in "${names[@]}"; do
	dir="$cases/$name"
	if [[ ! -d "$dir/catalog" ]]; then
		echo "record-opm-golden: $dir/catalog does not exist" >&2
		exit 2
	fi
	code=$(record "$OPM" "$dir" opm.golden)
	if [[ $code -eq 0 ]]; then valid=$((valid + 1)); else invalid=$((invalid + 1)); fi
	if [[ -n "$OPM_NEWER" && -f "$dir/expect" ]]; then
		record "$OPM_NEWER" "$dir" opm-newer.golden "# opm $newer_version" >/dev/null
		newer=$((newer + 1))
	fi
done
echo "record-opm-golden: ${#names[@]} cases recorded ($valid valid, $invalid invalid per opm v1.60.0)${OPM_NEWER:+; $newer with opm $newer_version}"
