package crd

import "strings"

// compareKubeVersions orders version names as Kubernetes does for CRDs, from
// least to most mature: v1alpha1 < v1alpha2 < v1beta1 < v1 < v2, and names
// that do not look like Kubernetes versions after all of them, alphabetically.
// It returns -1, 0 or 1.
func compareKubeVersions(a, b string) int {
	ka, oka := parseKubeVersion(a)
	kb, okb := parseKubeVersion(b)
	switch {
	case oka && okb:
		for i := range ka {
			if ka[i] != kb[i] {
				if ka[i] < kb[i] {
					return -1
				}
				return 1
			}
		}
		return 0
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// parseKubeVersion splits vMAJOR[(alpha|beta)MINOR] into a sortable key:
// major, stability (0 alpha, 1 beta, 2 GA), minor.
func parseKubeVersion(s string) ([3]int, bool) {
	if len(s) < 2 || s[0] != 'v' {
		return [3]int{}, false
	}
	major, rest, ok := leadingInt(s[1:])
	if !ok || major == 0 {
		return [3]int{}, false
	}
	if rest == "" {
		return [3]int{major, 2, 0}, true
	}
	stab := -1
	switch {
	case strings.HasPrefix(rest, "alpha"):
		stab, rest = 0, rest[len("alpha"):]
	case strings.HasPrefix(rest, "beta"):
		stab, rest = 1, rest[len("beta"):]
	}
	if stab < 0 {
		return [3]int{}, false
	}
	minor, rest, ok := leadingInt(rest)
	if !ok || rest != "" {
		return [3]int{}, false
	}
	return [3]int{major, stab, minor}, true
}

func leadingInt(s string) (int, string, bool) {
	n, i := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if n > 1<<20 {
			return 0, "", false
		}
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, s[i:], i > 0
}
