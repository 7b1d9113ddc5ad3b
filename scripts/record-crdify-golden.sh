#!/usr/bin/env bash
# Records catalog/crd/testdata/crdify/golden.txt: crdify's verdict on every
# generated old/new CRD pair, with the configuration OLM v1's preflight
# (operator-controller) gives crdify: description changes ignored, enum
# additions allowed, served versions not compared when conversion is Webhook,
# unhandled changes an error. The test TestCrdifyDifferential compares our
# verdicts with it; it never runs crdify itself.
#
# usage: scripts/record-crdify-golden.sh [path/to/crdify]   (default $CATALOGBOT_TOOLS/bin/crdify,
#        built from sigs.k8s.io/crdify@v0.6.0 by scripts/build-reference-tools.sh)
set -euo pipefail
crdify=${1:-${CRDIFY:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/crdify}}
[ -x "$crdify" ] || { echo "record-crdify-golden: crdify not found at $crdify (give its path, set CRDIFY, or run scripts/build-reference-tools.sh)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/preflight.yaml" <<'CFG'
# operator-controller internal/operator-controller/rukpak/preflights/crdupgradesafety defaultConfig()
conversion: Ignore
unhandledEnforcement: Error
validations:
- name: description
  enforcement: None
- name: enum
  enforcement: Error
  configuration:
    additionPolicy: Allow
CFG

cd "$root/catalog/crd"
go test -count=1 -run '^TestCrdifyDifferential$' -crdify.write="$work/pairs" . >/dev/null
n=0
for d in "$work"/pairs/*/; do
	# crdify exits 1 when it finds a failure; its JSON report is what counts.
	"$crdify" --config "$work/preflight.yaml" -o json "file://${d}old.json" "file://${d}new.json" >"${d}crdify.json" || true
	if [ ! -s "${d}crdify.json" ]; then
		echo "crdify produced no report for $d" >&2
		exit 1
	fi
	n=$((n + 1))
done
go test -count=1 -run '^TestCrdifyDifferential$' -crdify.record="$work/pairs" . >/dev/null || true
echo "recorded crdify's verdicts on $n pairs into catalog/crd/testdata/crdify/golden.txt"
