// Package mmsemver parses and orders versions exactly as github.com/Masterminds/semver/v3 (v3.3.0) does —
// the library behind opm's semver template and its bundle version checks — with the same errors, for the
// part of it catalogbot uses: the lenient and the strict parser, the ordering, and the accessors.
//
// It exists for the start-up of every process (issue 33.1): the library compiles five regular expressions
// when a program starts (173 kB and about 1,000 allocations before main, whether or not a version is ever
// parsed); this package scans by hand and does nothing at start. FuzzAgainstMasterminds holds both to the
// same results on arbitrary input.
//
// Layer: a leaf under catalog; it imports nothing of this module. catalog, catalog/template and their
// importers use it.
package mmsemver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The library's errors, with its wording (a finding quotes them).
var (
	ErrInvalidSemVer     = errors.New("Invalid Semantic Version")
	ErrEmptyString       = errors.New("Version string empty")
	ErrInvalidCharacters = errors.New("Invalid characters in version")
	ErrSegmentStartsZero = errors.New("Version segment starts with 0")
	ErrInvalidMetadata   = errors.New("Invalid Metadata string")
	ErrInvalidPrerelease = errors.New("Invalid Prerelease string")
)

// Version is a parsed version: three numbers, a pre-release and build metadata, and the text it came from.
type Version struct {
	major, minor, patch uint64
	pre, meta           string
	original            string
}

// isDigits reports whether every byte of s is an ASCII digit (true for "").
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isIdentChar reports whether c may be part of a pre-release or metadata identifier: [0-9A-Za-z-].
func isIdentChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-'
}

// isIdentChars reports whether every byte of s is an identifier character (true for "").
func isIdentChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// checkPrerelease: every dot-separated part is a number without a leading zero or made of identifier
// characters (empty parts pass, as in the library).
func checkPrerelease(p string) error {
	for part := range strings.SplitSeq(p, ".") {
		if isDigits(part) {
			if len(part) > 1 && part[0] == '0' {
				return ErrSegmentStartsZero
			}
		} else if !isIdentChars(part) {
			return ErrInvalidPrerelease
		}
	}
	return nil
}

// checkMetadata: every byte but the dots is an identifier character.
func checkMetadata(m string) error {
	for part := range strings.SplitSeq(m, ".") {
		if !isIdentChars(part) {
			return ErrInvalidMetadata
		}
	}
	return nil
}

// StrictNewVersion parses MAJOR.MINOR.PATCH[-PRERELEASE][+METADATA] with no "v" and no part left out.
func StrictNewVersion(v string) (*Version, error) {
	if v == "" {
		return nil, ErrEmptyString
	}
	major, rest, ok := strings.Cut(v, ".")
	if !ok {
		return nil, ErrInvalidSemVer
	}
	minor, patch, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, ErrInvalidSemVer
	}
	sv := &Version{original: v}
	// Metadata is cut off first, then the pre-release, both only from what follows the second dot.
	if p, m, ok := strings.Cut(patch, "+"); ok {
		if err := checkMetadata(m); err != nil {
			return nil, err
		}
		sv.meta, patch = m, p
	}
	if p, pre, ok := strings.Cut(patch, "-"); ok {
		if err := checkPrerelease(pre); err != nil {
			return nil, err
		}
		sv.pre, patch = pre, p
	}
	nums := [3]string{major, minor, patch}
	for _, n := range nums {
		if !isDigits(n) {
			return nil, ErrInvalidCharacters
		}
		if len(n) > 1 && n[0] == '0' {
			return nil, ErrSegmentStartsZero
		}
	}
	var err error
	for i, dst := range [3]*uint64{&sv.major, &sv.minor, &sv.patch} {
		if *dst, err = strconv.ParseUint(nums[i], 10, 64); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// NewVersion parses a version leniently: an optional "v", then MAJOR[.MINOR[.PATCH]] (leading zeros
// allowed, missing parts 0), then -PRERELEASE and +METADATA of non-empty dot-separated identifiers.
func NewVersion(v string) (*Version, error) {
	s := strings.TrimPrefix(v, "v")
	var nums [3]string
	i := 0
	for k := range nums {
		if k > 0 {
			if i == len(s) || s[i] != '.' {
				break
			}
			i++
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return nil, ErrInvalidSemVer
		}
		nums[k], i = s[i:j], j
	}
	sv := &Version{original: v}
	if i < len(s) && s[i] == '-' {
		j := identifiersEnd(s, i+1)
		if j == i+1 {
			return nil, ErrInvalidSemVer
		}
		sv.pre, i = s[i+1:j], j
	}
	if i < len(s) && s[i] == '+' {
		j := identifiersEnd(s, i+1)
		if j == i+1 {
			return nil, ErrInvalidSemVer
		}
		sv.meta, i = s[i+1:j], j
	}
	if i != len(s) {
		return nil, ErrInvalidSemVer
	}
	var err error
	for k, dst := range [3]*uint64{&sv.major, &sv.minor, &sv.patch} {
		if nums[k] == "" {
			continue
		}
		if *dst, err = strconv.ParseUint(nums[k], 10, 64); err != nil {
			return nil, fmt.Errorf("Error parsing version segment: %s", err)
		}
	}
	if sv.pre != "" {
		if err := checkPrerelease(sv.pre); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// identifiersEnd is the end of the identifiers starting at s[i]: one or more runs of identifier characters
// separated by single dots; i when there is none. A dot not followed by an identifier character is left.
func identifiersEnd(s string, i int) int {
	end := i
	for {
		j := end
		for j < len(s) && isIdentChar(s[j]) {
			j++
		}
		if j == end {
			return end - min(1, end-i) // a trailing dot (end > i) is not part of them
		}
		end = j
		if end == len(s) || s[end] != '.' {
			return end
		}
		end++
	}
}

// New makes a version of its parts; its Original is its String.
func New(major, minor, patch uint64, pre, metadata string) *Version {
	v := &Version{major: major, minor: minor, patch: patch, pre: pre, meta: metadata}
	v.original = v.String()
	return v
}

// String is MAJOR.MINOR.PATCH with -PRERELEASE and +METADATA when they are not empty (no "v").
func (v Version) String() string {
	b := strconv.AppendUint(nil, v.major, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.minor, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.patch, 10)
	if v.pre != "" {
		b = append(append(b, '-'), v.pre...)
	}
	if v.meta != "" {
		b = append(append(b, '+'), v.meta...)
	}
	return string(b)
}

// Original is the text the version was parsed from.
func (v *Version) Original() string { return v.original }

// Major, Minor, Patch, Prerelease and Metadata are the version's parts.
func (v Version) Major() uint64      { return v.major }
func (v Version) Minor() uint64      { return v.minor }
func (v Version) Patch() uint64      { return v.patch }
func (v Version) Prerelease() string { return v.pre }
func (v Version) Metadata() string   { return v.meta }

// LessThan, GreaterThan and Equal order by Compare.
func (v *Version) LessThan(o *Version) bool    { return v.Compare(o) < 0 }
func (v *Version) GreaterThan(o *Version) bool { return v.Compare(o) > 0 }

// Equal: the same pointer, or two non-nil versions that Compare equal (metadata aside).
func (v *Version) Equal(o *Version) bool {
	if v == o {
		return true
	}
	if v == nil || o == nil {
		return false
	}
	return v.Compare(o) == 0
}

// Compare is -1, 0 or 1 as v is lower than, equal to or higher than o: by the three numbers, then a version
// without a pre-release above one with, then the pre-releases part by part. Metadata is not compared.
func (v *Version) Compare(o *Version) int {
	for _, d := range [3][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.pre == "" && o.pre == "":
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	a, b := strings.Split(v.pre, "."), strings.Split(o.pre, ".")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if d := comparePart(x, y); d != 0 {
			return d
		}
	}
	return 0
}

// comparePart orders two pre-release parts: a missing part first, numbers (as unsigned 64-bit integers)
// before words, numbers by value, words by bytes.
func comparePart(x, y string) int {
	switch {
	case x == y:
		return 0
	case x == "":
		return -1
	case y == "":
		return 1
	}
	xn, xerr := strconv.ParseUint(x, 10, 64)
	yn, yerr := strconv.ParseUint(y, 10, 64)
	switch {
	case xerr != nil && yerr != nil:
		if x > y {
			return 1
		}
		return -1
	case yerr != nil:
		return -1
	case xerr != nil:
		return 1
	case xn > yn:
		return 1
	}
	return -1
}
