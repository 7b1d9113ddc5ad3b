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
# Build opm first with scripts/build-reference-tools.sh.
#
# Usage: scripts/record-opm-golden.sh [case-name...]   (default: every case)
#   OPM=/path/to/opm overrides the binary.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cases="$repo/testdata/opm-parity/cases"
OPM=${OPM:-${CATALOGBOT_TOOLS:-/work/tools}/bin/opm}

if [[ ! -x "$OPM" ]]; then
	echo "record-opm-golden: $OPM not found; run scripts/build-reference-tools.sh" >&2
	exit 2
fi
version=$("$OPM" version 2>&1 || true)
if [[ "$version" != *'OpmVersion:"v1.60.0"'* ]]; then
	echo "record-opm-golden: want opm v1.60.0, got: $version" >&2
	exit 2
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

valid=0 invalid=0
for name in "${names[@]}"; do
	dir="$cases/$name"
	if [[ ! -d "$dir/catalog" ]]; then
		echo "record-opm-golden: $dir/catalog does not exist" >&2
		exit 2
	fi
	set +e
	stderr=$(cd "$dir" && timeout 60 "$OPM" validate catalog 2>&1 >/dev/null)
	code=$?
	set -e
	if [[ $code -eq 124 ]]; then
		echo "record-opm-golden: opm timed out on $name" >&2
		exit 2
	fi
	{
		echo "exit $code"
		if [[ -n "$stderr" ]]; then
			printf '%s\n' "$stderr" |
				sed -E -e 's/time="[^"]*"/time="<time>"/g' \
					-e "s#$(printf '%s' "$dir" | sed 's/[.[\*^$#]/\\&/g')#<case>#g"
		fi
	} >"$dir/opm.golden.new"
	if [[ -f "$dir/opm.golden" ]] && cmp -s <(canon "$dir/opm.golden") <(canon "$dir/opm.golden.new"); then
		rm "$dir/opm.golden.new"
	else
		mv "$dir/opm.golden.new" "$dir/opm.golden"
	fi
	if [[ $code -eq 0 ]]; then valid=$((valid + 1)); else invalid=$((invalid + 1)); fi
done
echo "record-opm-golden: ${#names[@]} cases recorded ($valid valid, $invalid invalid per opm)"
