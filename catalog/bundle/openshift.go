package bundle

import (
	"fmt"
	"strconv"
	"strings"
)

// AnnotationOpenShiftVersions is the annotation of metadata/annotations.yaml naming the OpenShift versions a
// bundle is published for (Red Hat's catalogs and the community pipeline read it).
const AnnotationOpenShiftVersions = "com.redhat.openshift.versions"

// maxOpenShiftVersionLen bounds the annotation's value: a range is a few characters.
const maxOpenShiftVersionLen = 64

// OpenShiftRange is a range of OpenShift 4 minor versions, as com.redhat.openshift.versions writes it:
//
//	v4.12          4.12 and every later version
//	=v4.14         4.14 only
//	v4.12-v4.16    4.12 to 4.16, both included
//	v4.5,v4.6      the one list form still accepted: 4.5 and every later version
//
// The "v" is optional. Min and Max are minor versions of OpenShift 4; Max is -1 when the range has no end.
type OpenShiftRange struct {
	Min, Max int
}

// Open says the range has no end.
func (r OpenShiftRange) Open() bool { return r.Max < 0 }

// Contains says whether OpenShift 4.minor is in the range.
func (r OpenShiftRange) Contains(minor int) bool {
	return minor >= r.Min && (r.Open() || minor <= r.Max)
}

func (r OpenShiftRange) String() string {
	switch {
	case r.Open():
		return fmt.Sprintf("OpenShift 4.%d and later", r.Min)
	case r.Min == r.Max:
		return fmt.Sprintf("OpenShift 4.%d", r.Min)
	}
	return fmt.Sprintf("OpenShift 4.%d to 4.%d", r.Min, r.Max)
}

// ParseOpenShiftVersions reads the value of com.redhat.openshift.versions. The error says what is wrong and
// what the forms are.
func ParseOpenShiftVersions(s string) (OpenShiftRange, error) {
	const forms = `write v4.12 (4.12 and later), =v4.14 (only 4.14) or v4.12-v4.16 (4.12 to 4.16)`
	if len(s) > maxOpenShiftVersionLen {
		return OpenShiftRange{}, fmt.Errorf("%d characters, more than a range can need (%d); %s", len(s), maxOpenShiftVersionLen, forms)
	}
	v := strings.TrimSpace(s)
	if v == "" {
		return OpenShiftRange{}, fmt.Errorf("empty; %s", forms)
	}
	// The one list the tools still accept, a legacy of the first catalogs.
	if v == "v4.5,v4.6" || v == "v4.6,v4.5" {
		return OpenShiftRange{Min: 5, Max: -1}, nil
	}
	if strings.Contains(v, ",") {
		return OpenShiftRange{}, fmt.Errorf("%q is a list; lists are not accepted (except the legacy v4.5,v4.6): %s", v, forms)
	}
	lo, hi, isRange := strings.Cut(v, "-")
	if isRange {
		if strings.HasPrefix(lo, "=") || strings.HasPrefix(hi, "=") {
			return OpenShiftRange{}, fmt.Errorf("%q: a range cannot use =; %s", v, forms)
		}
		min, err := parseOpenShiftMinor(lo)
		if err != nil {
			return OpenShiftRange{}, fmt.Errorf("%q: %v; %s", v, err, forms)
		}
		max, err := parseOpenShiftMinor(hi)
		if err != nil {
			return OpenShiftRange{}, fmt.Errorf("%q: %v; %s", v, err, forms)
		}
		if max < min {
			return OpenShiftRange{}, fmt.Errorf("%q ends before it starts; write the lower version first", v)
		}
		return OpenShiftRange{Min: min, Max: max}, nil
	}
	exact := strings.HasPrefix(v, "=")
	minor, err := parseOpenShiftMinor(strings.TrimPrefix(v, "="))
	if err != nil {
		return OpenShiftRange{}, fmt.Errorf("%q: %v; %s", v, err, forms)
	}
	if exact {
		return OpenShiftRange{Min: minor, Max: minor}, nil
	}
	return OpenShiftRange{Min: minor, Max: -1}, nil
}

// parseOpenShiftMinor reads v4.N (or 4.N) and returns N.
func parseOpenShiftMinor(s string) (int, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	major, minor, ok := strings.Cut(t, ".")
	if !ok || !digits(major) || !digits(minor) {
		return 0, fmt.Errorf("%q is not an OpenShift version major.minor such as v4.12", s)
	}
	if major != "4" {
		return 0, fmt.Errorf("%q is not an OpenShift 4 version", s)
	}
	n, err := strconv.Atoi(minor)
	if err != nil || n > 999 {
		return 0, fmt.Errorf("%q: minor version out of range", s)
	}
	return n, nil
}

// ParseMaxOpenShiftVersion reads the value of an olm.maxOpenShiftVersion property ("4.8", or 4.8 as a
// number): OLM reads major.minor and ignores a patch version.
func ParseMaxOpenShiftVersion(s string) (int, error) {
	t := strings.TrimSpace(s)
	if len(t) > maxOpenShiftVersionLen {
		return 0, fmt.Errorf("%d characters, more than a version can need", len(t))
	}
	parts := strings.Split(strings.TrimPrefix(t, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("%q is not an OpenShift version major.minor such as 4.14", s)
	}
	for _, p := range parts {
		if !digits(p) {
			return 0, fmt.Errorf("%q is not an OpenShift version major.minor such as 4.14", s)
		}
	}
	return parseOpenShiftMinor(parts[0] + "." + parts[1])
}

func digits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// KubernetesMinorOfOpenShift is the Kubernetes minor version OpenShift 4.minor is built on (4.N is 1.(N+13):
// 4.9 is 1.22, 4.12 is 1.25, 4.16 is 1.29).
func KubernetesMinorOfOpenShift(minor int) int { return minor + 13 }
