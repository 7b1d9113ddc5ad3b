package crd

import (
	"fmt"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// Overrides set the severity of rules by id (error, warning or ignore). The
// repository policy and the CLI's --override flags fill it.
type Overrides map[string]catalog.Severity

// ParseOverride reads "rule=severity", e.g. "crd.pattern-changed=warning".
func ParseOverride(s string) (rule string, sev catalog.Severity, err error) {
	rule, val, ok := strings.Cut(s, "=")
	rule, val = strings.TrimSpace(rule), strings.TrimSpace(val)
	if !ok || rule == "" {
		return "", "", fmt.Errorf("override %q: want rule=severity, e.g. %s=warning", s, RulePatternChanged)
	}
	if _, known := ruleByID(rule); !known {
		return "", "", fmt.Errorf("override %q: unknown rule %q (catalog-check crd-diff --rules lists them)", s, rule)
	}
	sev, err = catalog.ParseSeverity(val)
	if err != nil {
		return "", "", fmt.Errorf("override %q: %w", s, err)
	}
	return rule, sev, nil
}

// Validate reports the first unknown rule id or severity.
func (o Overrides) Validate() error {
	if p := o.problems(); len(p) > 0 {
		return fmt.Errorf("%s", p[0])
	}
	return nil
}

func (o Overrides) problems() []string {
	var out []string
	for id, sev := range o {
		if _, known := ruleByID(id); !known {
			out = append(out, fmt.Sprintf("override names unknown rule %q", id))
			continue
		}
		if _, err := catalog.ParseSeverity(string(sev)); err != nil {
			out = append(out, fmt.Sprintf("override for %s: %v", id, err))
		}
	}
	sort.Strings(out)
	return out
}
