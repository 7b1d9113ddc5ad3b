#!/usr/bin/env bash
# build-reference-tools.sh builds the reference tools catalogbot is compared
# against — opm v1.60.0, crdify v0.6.0 and cosign v2.6.1 — into ${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}/bin.
#
# Nothing of theirs enters this repository. The module proxy refuses the
# version-list lookup that `go install mod@version` needs, so each module is
# fetched with `go mod download -json`, copied out of the (read-only) module
# cache into a temporary directory and built there.
#
# Idempotent: a tool whose binary already exists is not rebuilt (set
# REBUILD=1 to force). Prints the version of each tool at the end.
#
# OPM_NEWER=v1.69.0 also builds that newer opm as bin/opm-v1.69.0: the corpus
# in testdata/opm-parity uses it to confirm the rules catalogbot takes from
# newer opm releases (image references, skipRange syntax).
#
# ONLY=cosign (or opm, crdify) builds that one tool alone.
#
# Usage: scripts/build-reference-tools.sh
set -euo pipefail

OPM_MODULE=github.com/operator-framework/operator-registry
OPM_VERSION=v1.60.0
CRDIFY_MODULE=sigs.k8s.io/crdify
CRDIFY_VERSION=v0.6.0
COSIGN_MODULE=github.com/sigstore/cosign/v2
COSIGN_VERSION=v2.6.1

TOOLS=${CATALOGBOT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/catalogbot/tools}
OUT="$TOOLS/bin"
mkdir -p "$OUT"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# module_dir MODULE@VERSION prints the module's directory in the module cache.
module_dir() {
	local json dir
	json=$(go mod download -json "$1")
	dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [[ -z "$dir" || ! -d "$dir" ]]; then
		printf 'build-reference-tools: no module directory for %s:\n%s\n' "$1" "$json" >&2
		return 1
	fi
	printf '%s\n' "$dir"
}

# build NAME MODULE VERSION PKG TAGS LDFLAGS copies the module out and builds PKG as $OUT/NAME.
build() {
	local name=$1 module=$2 version=$3 pkg=$4 tags=$5 ldflags=$6 src dst
	if [[ -x "$OUT/$name" && "${REBUILD:-0}" != 1 ]]; then
		echo "build-reference-tools: $OUT/$name exists, skipping (REBUILD=1 forces)"
		return 0
	fi
	src=$(module_dir "$module@$version")
	dst="$work/$name"
	cp -R "$src" "$dst"
	chmod -R u+w "$dst"
	echo "build-reference-tools: building $name from $module@$version ($pkg)"
	(
		cd "$dst"
		# The module's own go.mod/go.sum decide its dependencies; GOFLAGS from
		# the caller (e.g. -mod=vendor) must not leak in.
		GOFLAGS='-mod=mod -buildvcs=false' GOWORK=off CGO_ENABLED=0 go build -trimpath \
			${tags:+-tags="$tags"} ${ldflags:+-ldflags="$ldflags"} -o "$dst.bin" "$pkg"
	)
	mv "$dst.bin" "$OUT/$name"
}

wanted() { [[ -z "${ONLY:-}" || "$ONLY" == "$1" ]]; }

if wanted opm; then
	build opm "$OPM_MODULE" "$OPM_VERSION" ./cmd/opm json1,containers_image_openpgp \
		"-X $OPM_MODULE/cmd/opm/version.opmVersion=$OPM_VERSION"
fi
if wanted crdify; then
	build crdify "$CRDIFY_MODULE" "$CRDIFY_VERSION" . "" ""
fi
# cosign verifies the signatures and attestations catalogbot attaches (sign/ and test/sigclients).
if wanted cosign; then
	build cosign "$COSIGN_MODULE" "$COSIGN_VERSION" ./cmd/cosign "" \
		"-X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
fi
if [[ -n "${OPM_NEWER:-}" ]]; then
	build "opm-$OPM_NEWER" "$OPM_MODULE" "$OPM_NEWER" ./cmd/opm json1,containers_image_openpgp \
		"-X $OPM_MODULE/cmd/opm/version.opmVersion=$OPM_NEWER"
	echo "opm-$OPM_NEWER: $("$OUT/opm-$OPM_NEWER" version 2>&1 | head -n 1)"
fi

if wanted opm; then echo "opm:    $("$OUT/opm" version 2>&1 | head -n 1)"; fi
if wanted crdify; then echo "crdify: $CRDIFY_MODULE@$CRDIFY_VERSION at $OUT/crdify"; fi
if wanted cosign; then echo "cosign: $("$OUT/cosign" version 2>&1 | grep -m1 GitVersion)"; fi
