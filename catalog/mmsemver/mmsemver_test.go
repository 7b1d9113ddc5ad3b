package mmsemver

import (
	"fmt"
	"testing"

	masterminds "github.com/Masterminds/semver/v3"
)

// seeds are versions of every shape the parsers tell apart, good and bad.
var seeds = []string{
	"", "v", "1", "v1", "V1", "1.2", "1.2.3", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "0.0.0", "1.2.3.4", "1..3",
	"1.2.", ".1.2", "1.2.3-", "1.2.3+", "1.2.3-+", "1.2.3-a.", "1.2.3-.a", "1.2.3-a..b", "1.2.3+a..b", "1.2.3-01",
	"1.2.3-0", "1.2.3-alpha.1", "1.2.3-alpha.01", "1.2.3-alpha-1+build.5", "1.2.3+build-5.x", "1.2.3+b+c",
	"1.2.3-a+b-c", "1.2-rc.1", "1-rc.1", "1.2.3-rc.1.2", "1.2.3-1.2.3.4", "18446744073709551615.0.0",
	"18446744073709551616.0.0", "1.2.3-99999999999999999999", "1.2.3-ä", "1.2.3+ä", "1.2.3 ", " 1.2.3",
	"1.2.3-a_b", "1.2.3-x.7.z.92", "0.1.0-alpha.beta", "1.0.0-beta.11", "1.0.0-rc.1+build.1", "2.0.0-x-y-z.--",
	"v1.2.3-rc.1+meta", "v01.02", "1.2.3-\xff", "4.8.0-202311220908.p0.g8d5fc5f.assembly.stream",
}

// FuzzAgainstMasterminds: both parsers of this package accept and refuse what the library's do, with the
// same error text, the same parts, String and Original, and the two versions compare alike.
func FuzzAgainstMasterminds(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, seeds[(i*7+3)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, p := range []struct {
			name string
			ours func(string) (*Version, error)
			lib  func(string) (*masterminds.Version, error)
		}{
			{"NewVersion", NewVersion, masterminds.NewVersion},
			{"StrictNewVersion", StrictNewVersion, masterminds.StrictNewVersion},
		} {
			va, la := same(t, p.name, a, p.ours, p.lib)
			vb, lb := same(t, p.name, b, p.ours, p.lib)
			if va == nil || vb == nil {
				continue
			}
			if got, want := va.Compare(vb), la.Compare(lb); got != want {
				t.Fatalf("%s: Compare(%q, %q) = %d, library %d", p.name, a, b, got, want)
			}
			if va.Equal(vb) != la.Equal(lb) || va.LessThan(vb) != la.LessThan(lb) || va.GreaterThan(vb) != la.GreaterThan(lb) {
				t.Fatalf("%s: Equal/LessThan/GreaterThan(%q, %q) differ from the library", p.name, a, b)
			}
		}
	})
}

func same(t *testing.T, name, s string, ours func(string) (*Version, error), lib func(string) (*masterminds.Version, error)) (*Version, *masterminds.Version) {
	t.Helper()
	v, err := ours(s)
	lv, lerr := lib(s)
	if fmt.Sprint(err) != fmt.Sprint(lerr) {
		t.Fatalf("%s(%q): error %v, library %v", name, s, err, lerr)
	}
	if err != nil {
		return nil, nil
	}
	got := fmt.Sprint(v.Major(), v.Minor(), v.Patch(), "|", v.Prerelease(), "|", v.Metadata(), "|", v.String(), "|", v.Original())
	want := fmt.Sprint(lv.Major(), lv.Minor(), lv.Patch(), "|", lv.Prerelease(), "|", lv.Metadata(), "|", lv.String(), "|", lv.Original())
	if got != want {
		t.Fatalf("%s(%q) = %s, library %s", name, s, got, want)
	}
	return v, lv
}

// TestNew: a version made of its parts prints and compares as the library's.
func TestNew(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"rc.1", ""}, {"", "b.2"}, {"alpha", "x"}} {
		v, lv := New(1, 2, 3, c[0], c[1]), masterminds.New(1, 2, 3, c[0], c[1])
		if v.String() != lv.String() || v.Original() != lv.Original() {
			t.Errorf("New(1, 2, 3, %q, %q) = %s (%s), library %s (%s)", c[0], c[1], v, v.Original(), lv, lv.Original())
		}
	}
	if !New(0, 0, 0, "", "").LessThan(New(0, 0, 1, "", "")) {
		t.Error("0.0.0 is not below 0.0.1")
	}
}

// TestErrorTexts: the exported errors read as the library's (callers compare with errors.Is, findings quote them).
func TestErrorTexts(t *testing.T) {
	for _, p := range [][2]error{
		{ErrInvalidSemVer, masterminds.ErrInvalidSemVer}, {ErrEmptyString, masterminds.ErrEmptyString},
		{ErrInvalidCharacters, masterminds.ErrInvalidCharacters}, {ErrSegmentStartsZero, masterminds.ErrSegmentStartsZero},
		{ErrInvalidMetadata, masterminds.ErrInvalidMetadata}, {ErrInvalidPrerelease, masterminds.ErrInvalidPrerelease},
	} {
		if p[0].Error() != p[1].Error() {
			t.Errorf("%q, library %q", p[0], p[1])
		}
	}
}
