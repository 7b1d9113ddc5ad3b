package policy

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a policy file. Line and Column count from 1;
// 0 means unknown.
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string
	// Hint says how to fix it.
	Hint string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	if p.Hint != "" {
		b.WriteString(" (")
		b.WriteString(p.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// ParseError holds every problem found in a policy file, in file order.
type ParseError struct {
	Problems []Problem
}

func (e *ParseError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Column < ps[j].Column
	})
}
