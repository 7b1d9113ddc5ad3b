package crd

import (
	"strconv"
	"strings"
)

// compareKubeVersions orders served version names as the API server ranks
// them (version priority) and as OLM v1's preflight walks them: least
// preferred first. Kubernetes-style names (vN, vNalphaM, vNbetaM) come after
// every other name and rank by stability before major version (v2alpha1 <
// v1beta1 < v1 < v2); other names rank in reverse alphabetical order, so
// v1-10-0 comes before v1. It returns what apimachinery's
// CompareKubeAwareVersionStrings (v0.29.0) returns — the same differences,
// not only their signs — so a served-version pair is compared in the
// direction the preflight compares it; FuzzCompareKubeVersions holds the two
// together. Written here because that package compiles a regular expression
// in every process at start (issue 33.1).
func compareKubeVersions(a, b string) int {
	if a == b {
		return 0
	}
	amajor, atype, aminor, aok := parseKubeVersion(a)
	bmajor, btype, bminor, bok := parseKubeVersion(b)
	switch {
	case !aok && !bok:
		return strings.Compare(b, a)
	case !aok:
		return -1
	case !bok:
		return 1
	case atype != btype:
		return atype - btype
	case amajor != bmajor:
		return amajor - bmajor
	}
	return aminor - bminor
}

// Version stabilities, lowest first.
const (
	kubeAlpha = iota
	kubeBeta
	kubeGA
)

// parseKubeVersion reads v<digits>[(alpha|beta)<digits>]; numbers that do not fit an int are not versions.
func parseKubeVersion(v string) (major, stability, minor int, ok bool) {
	if len(v) < 2 || v[0] != 'v' {
		return 0, 0, 0, false
	}
	i := 1
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 1 {
		return 0, 0, 0, false
	}
	major, err := strconv.Atoi(v[1:i])
	if err != nil {
		return 0, 0, 0, false
	}
	rest := v[i:]
	switch {
	case rest == "":
		return major, kubeGA, 0, true
	case strings.HasPrefix(rest, "alpha"):
		stability, rest = kubeAlpha, rest[len("alpha"):]
	case strings.HasPrefix(rest, "beta"):
		stability, rest = kubeBeta, rest[len("beta"):]
	default:
		return 0, 0, 0, false
	}
	for j := 0; j < len(rest); j++ {
		if rest[j] < '0' || rest[j] > '9' {
			return 0, 0, 0, false
		}
	}
	if rest == "" {
		return 0, 0, 0, false
	}
	if minor, err = strconv.Atoi(rest); err != nil {
		return 0, 0, 0, false
	}
	return major, stability, minor, true
}
