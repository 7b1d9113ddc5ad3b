#!/usr/bin/env bash
# Replays the crd-safety rules over the upgrades real merged commits added to
# a catalog repository, and asks crdify (OLM v1's preflight: crdify v0.6.0
# with operator-controller's configuration) about every CRD pair.
#
# usage: scripts/replay-crd-safety.sh REPO [CATALOG_DIR ...] > table.md
#   REPO         a clone (bare or not) of redhat-openshift-ecosystem/community-operators-prod
#   CATALOG_DIR  catalog directories in it whose bundles carry olm.bundle.object
#                (default: catalogs/v4.16)
# CRDIFY (default $CATALOGBOT_TOOLS/bin/crdify) is the crdify binary.
#
# Each commit that touched a package directory is a case: the directory at the
# commit's parent and at the commit. Packages whose files the clone lacks
# (large blobs left out of a partial clone) are skipped.
set -euo pipefail
repo=${1:?usage: $0 REPO [CATALOG_DIR ...]}
shift
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(catalogs/v4.16)
crdify=${CRDIFY:-${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin/crdify}
[ -x "$crdify" ] || { echo "replay-crd-safety: crdify not found at $crdify (set CRDIFY, or run scripts/build-reference-tools.sh)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/preflight.yaml" <<'CFG'
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

n=0
for d in "${dirs[@]}"; do
	git -C "$repo" log --format=%H --no-merges -- "$d" | while read -r c; do
		git -C "$repo" diff-tree --no-commit-id --name-only -r "$c" -- "$d" | cut -d/ -f1-3 | sort -u
	done
done | sort -u >"$work/touched" || true
while read -r c; do
	git -C "$repo" diff-tree --no-commit-id --name-only -r "$c" -- "${dirs[@]}" | cut -d/ -f1-3 | sort -u | while read -r pkg; do
		n=$((n + 1))
		case_dir="$work/cases/$(echo "$c-$pkg" | tr '/' '_')"
		mkdir -p "$case_dir/old" "$case_dir/new"
		if ! git -C "$repo" archive "$c^" "$pkg" 2>/dev/null | tar -x -C "$case_dir/old" 2>/dev/null ||
			! git -C "$repo" archive "$c" "$pkg" 2>/dev/null | tar -x -C "$case_dir/new" 2>/dev/null; then
			rm -rf "$case_dir"
			continue
		fi
		echo "$c" >"$case_dir/commit"
	done
done < <(for d in "${dirs[@]}"; do git -C "$repo" log --format=%H --no-merges -- "$d"; done | sort -u)
cases=$(ls "$work/cases" 2>/dev/null | wc -l)
echo "replaying $cases package changes" >&2

cd "$root/catalog/crd"
go test -count=1 -run '^TestReplay$' -crd.replay="$work/cases" . >&2
pairs=0
for p in "$work"/cases/*/pairs/*/; do
	[ -d "$p" ] || continue
	"$crdify" --config "$work/preflight.yaml" -o json "file://${p}old.json" "file://${p}new.json" >"${p}crdify.json" || true
	pairs=$((pairs + 1))
done
echo "ran crdify on $pairs CRD pairs" >&2
go test -count=1 -run '^TestReplay$' -crd.replay="$work/cases" -crd.replay-judge="$work/table.md" . >&2
cat "$work/table.md"
