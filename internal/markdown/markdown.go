// Package markdown holds the small text helpers of the reports catalogbot writes as GitHub markdown (check-run
// summaries, comments, the checker's job summary): cutting to a rune budget, code spans safe in a table cell,
// counted nouns. It imports nothing of ours; checks, app and cmd use it.
package markdown

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// TruncateRunes keeps s to n runes, the last ones replaced by suffix when it is cut.
func TruncateRunes(s string, n int, suffix string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(suffix)
	i := 0
	for pos := range s {
		if i == keep {
			return s[:pos] + suffix
		}
		i++
	}
	return s
}

// Code makes s safe inside `code` in a markdown table cell: one line, no backquote, no pipe, at
// most 500 runes.
func Code(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ", "|", `\|`).Replace(TruncateRunes(s, 500, "…"))
}

// Count writes n with its noun: "1 error", "3 errors" (many is the plural form).
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
