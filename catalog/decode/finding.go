package decode

import (
	"fmt"
	"sort"
)

// Severity says how much a finding matters. The zero value is not valid.
type Severity string

const (
	// SeverityError makes a catalog invalid (opm would refuse it) or a change unsafe.
	SeverityError Severity = "error"
	// SeverityWarning is worth a look but never changes the verdict.
	SeverityWarning Severity = "warning"
	// SeverityIgnore is only used by overrides: a finding with it is dropped.
	SeverityIgnore Severity = "ignore"
)

// ParseSeverity accepts error, warning and ignore.
func ParseSeverity(s string) (Severity, error) {
	switch Severity(s) {
	case SeverityError, SeverityWarning, SeverityIgnore:
		return Severity(s), nil
	}
	return "", fmt.Errorf("unknown severity %q (want error, warning or ignore)", s)
}

// Position is a place in a source file. Line and Column count from 1; 0 means unknown.
// File is slash-separated and relative to the root the catalog was loaded from.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Less orders positions by file, then line, then column.
func (p Position) Less(q Position) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Column < q.Column
}

// Finding is one thing a rule has to say about a catalog. It is data: front ends
// (CLI text, JSON, check-run annotations, workflow commands) decide how to show it.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Position
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Package is the package the finding is about, empty for findings that
	// concern no single package (a file that does not parse, say).
	Package string `json:"package,omitempty"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s", f.Position, f.Rule, f.Message)
}

// SortFindings orders findings by position, then rule, then message, so output is stable.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Position != b.Position {
			return a.Position.Less(b.Position)
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
}

// Rule describes one kind of finding: a stable id (family.name in lower
// kebab case, e.g. "channel.multiple-heads"), its default severity, one line on
// what it means, and how to fix it. Every package that emits findings exposes
// its rules as a table so the rules reference is generated and cannot drift.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Hint     string   `json:"hint"`
	// Source says where the rule comes from (an opm check, a spec section, our own).
	Source string `json:"source,omitempty"`
}
