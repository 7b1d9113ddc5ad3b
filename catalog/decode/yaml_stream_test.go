package decode

import (
	"strings"
	"testing"
)

// separatorLinesByLine is the line-by-line reading nextSeparatorLine replaces: every line that starts with
// "---", as (offset, end of line, line number).
func separatorLinesByLine(src string) [][3]int {
	var out [][3]int
	line := 1
	for off := 0; off < len(src); line++ {
		end := strings.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(src)
		}
		if strings.HasPrefix(src[off:end], "---") {
			out = append(out, [3]int{off, end, line})
		}
		off = next
	}
	return out
}

func separatorLines(src string) [][3]int {
	var out [][3]int
	for off, line := 0, 1; ; {
		at, end, atLine, ok := nextSeparatorLine(src, off, line)
		if !ok {
			return out
		}
		out = append(out, [3]int{at, end, atLine})
		off, line = min(end+1, len(src)), atLine+1
	}
}

func checkSeparatorLines(t *testing.T, src string) {
	t.Helper()
	want, got := separatorLinesByLine(src), separatorLines(src)
	if len(want) != len(got) {
		t.Fatalf("%q: separator lines %v, want %v", src, got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%q: separator lines %v, want %v", src, got, want)
		}
	}
}

var separatorSeeds = []string{
	"", "---", "---\n", "\n---", "a: 1\n---\nb: 2\n", "a: ---\n---\n", "x---\n---", "----\n--- # c\n---x\n",
	"a: b---c---d\n  ---\n---\n\n---", "--\n-\n---", "\n\n\n---\n\n", "a---\n", "--- \r\n---\r\n",
}

// TestNextSeparatorLine: the separator lines found a stretch at a time are the ones a line-by-line reading finds,
// with the same offsets and line numbers.
func TestNextSeparatorLine(t *testing.T) {
	for _, s := range separatorSeeds {
		checkSeparatorLines(t, s)
	}
}

func FuzzNextSeparatorLine(f *testing.F) {
	for _, s := range separatorSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkSeparatorLines(t, src)
	})
}
