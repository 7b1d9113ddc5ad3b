package catalog_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
)

// The opm differential corpus lives in testdata/opm-parity/cases/<case>/:
//
//	catalog/   the catalog tree opm and we both read
//	about      one line on what the case exercises
//	opm.golden "exit N" then opm v1.60.0's stderr, written by
//	           scripts/record-opm-golden.sh (never edit by hand)
//	expect     optional: where we deliberately differ from opm v1.60.0
//	           (malformed JSON, symlinks, newer-opm image and skipRange
//	           rules). Line 1 is "valid" or "invalid" and a reason; an
//	           optional "rules: id id…" line names rule ids we must report.
//	warnings   optional: "rules: id id…", warnings of our own (beyond opm)
//	           the case must raise; they never change the verdict.
//
// For every case, our verdict (any error finding = invalid) must equal opm's,
// or expect's. Where opm refuses a catalog and no expect file overrides it,
// every message opm prints must have a counterpart among our error findings:
// opmMessageRules maps opm's message patterns to the rule ids that answer
// them.
const opmParityCases = "../testdata/opm-parity/cases"

// opmMessageRule says which of our rule ids answer an opm error message.
type opmMessageRule struct {
	pattern *regexp.Regexp
	rules   []string
}

// opmMessageRules maps each kind of opm v1.60.0 message to our rules. The first
// matching pattern decides, so specific patterns come before general ones. A
// message may be answered by more than one rule where opm lumps together what
// we tell apart (a missing default channel surfaces in opm as an empty
// synthesised channel, say).
var opmMessageRules = []opmMessageRule{
	// Loading (declcfg.LoadFS and the YAML/JSON decoder).
	{regexp.MustCompile(`^invalid Yaml document separator: `), []string{"load.yaml-separator"}},
	{regexp.MustCompile(`^object '' is missing root schema field$`), []string{"load.empty-document", "load.missing-schema", "load.not-object"}},
	{regexp.MustCompile(`^object '.+' is missing root schema field$`), []string{"load.missing-schema"}},
	{regexp.MustCompile(`^error converting YAML to JSON: yaml: invalid map key: `), []string{"load.unsupported-key", "load.yaml-syntax"}},
	{regexp.MustCompile(`^error converting YAML to JSON: unsupported map key `), []string{"load.unsupported-key"}},
	{regexp.MustCompile(`^error converting YAML to JSON: json: unsupported value: `), []string{"load.number-range"}},
	{regexp.MustCompile(`^error converting YAML to JSON: yaml: `), []string{"load.yaml-syntax"}},
	{regexp.MustCompile(`expected value for key "(?i:schema|package|name)" to be a string`), []string{"load.meta-not-string"}},
	{regexp.MustCompile(`duplicate keys for key `), []string{"load.case-folded-key"}},
	{regexp.MustCompile(`cannot unmarshal \w+ into Go value of type map\[string\]interface`), []string{"load.not-object"}},
	{regexp.MustCompile(`cannot unmarshal number \S+ into Go value of type float64`), []string{"load.number-range"}},
	{regexp.MustCompile(`^(json: offset \d+: )?(invalid character |unexpected EOF$)`), []string{"load.json-syntax"}},
	// Typed decoding of the four OLM schemas.
	{regexp.MustCompile(`^parse package: `), []string{"package.field-invalid"}},
	{regexp.MustCompile(`^parse channel: `), []string{"channel.field-invalid"}},
	{regexp.MustCompile(`^parse bundle: `), []string{"bundle.field-invalid"}},
	{regexp.MustCompile(`^parse deprecation: `), []string{"deprecation.field-invalid"}},
	// opm checks the shape of olm.bundle.object values while loading; we do it
	// with the other property shapes.
	{regexp.MustCompile(`^read bundle objects: .* as bundle object: json: cannot unmarshal `), []string{"bundle.object-invalid", "bundle.property-invalid"}},
	{regexp.MustCompile(`^read bundle objects: `), []string{"bundle.object-invalid"}},
	{regexp.MustCompile(`^parse properties for bundle `), []string{"bundle.property-invalid"}},
	// declcfg.ConvertToModel.
	{regexp.MustCompile(`^config contains package with no name$`), []string{"package.name-empty"}},
	{regexp.MustCompile(`^duplicate package `), []string{"package.duplicate"}},
	{regexp.MustCompile(`^invalid package name `), []string{"package.name-invalid"}},
	{regexp.MustCompile(`^unknown package ".*" for channel `), []string{"channel.package-unknown"}},
	{regexp.MustCompile(`^package ".*" contains channel with no name$`), []string{"channel.name-empty"}},
	{regexp.MustCompile(`^package ".*" has duplicate channel `), []string{"channel.duplicate"}},
	{regexp.MustCompile(`^invalid package ".*", channel ".*": duplicate entry `), []string{"channel.entry-duplicate"}},
	{regexp.MustCompile(`^package name must be set for bundle `), []string{"bundle.package-empty"}},
	{regexp.MustCompile(`^unknown package ".*" for bundle `), []string{"bundle.package-unknown"}},
	{regexp.MustCompile(`^package ".*" has duplicate bundle `), []string{"bundle.duplicate"}},
	{regexp.MustCompile(`must have exactly 1 "olm.package" property, found 0$`), []string{"bundle.package-property-missing"}},
	{regexp.MustCompile(`must have exactly 1 "olm.package" property, found \d+$`), []string{"bundle.package-property-multiple"}},
	{regexp.MustCompile(`^package ".*" does not match "olm.package" property `), []string{"bundle.package-property-mismatch"}},
	{regexp.MustCompile(`^error parsing bundle ".*" version `), []string{"bundle.version-invalid"}},
	{regexp.MustCompile(`^package ".*", bundle "" not found in any channel entries$`), []string{"bundle.name-empty", "bundle.not-in-channel"}},
	{regexp.MustCompile(`^package ".*", bundle ".*" not found in any channel entries$`), []string{"bundle.not-in-channel"}},
	// "entries []" is opm's way of naming an entry whose name is empty.
	{regexp.MustCompile(`^no olm.bundle blobs found in package ".*" for olm.channel entries \[\]$`), []string{"channel.entry-name-empty", "channel.entry-bundle-missing"}},
	{regexp.MustCompile(`^no olm.bundle blobs found in package ".*" for olm.channel entries `), []string{"channel.entry-bundle-missing"}},
	{regexp.MustCompile(`^package name must be set for deprecation item `), []string{"deprecation.package-empty"}},
	{regexp.MustCompile(`^cannot apply deprecations to an unknown package `), []string{"deprecation.package-unknown"}},
	{regexp.MustCompile(`^expected a maximum of one deprecation per package: `), []string{"deprecation.duplicate"}},
	{regexp.MustCompile(`^schema must be set for deprecation entry `), []string{"deprecation.reference-schema-empty"}},
	{regexp.MustCompile(`^duplicate deprecation entry `), []string{"deprecation.reference-duplicate"}},
	{regexp.MustCompile(`^cannot deprecate bundle `), []string{"deprecation.bundle-unknown"}},
	{regexp.MustCompile(`^cannot deprecate channel `), []string{"deprecation.channel-unknown"}},
	{regexp.MustCompile(`^package name must be empty for deprecated package `), []string{"deprecation.package-reference-named"}},
	{regexp.MustCompile(`^cannot deprecate object .* object schema unknown$`), []string{"deprecation.reference-schema-unknown"}},
	// model.Model.Validate (the leaves of opm's "invalid index" tree).
	{regexp.MustCompile(`^channel must contain at least one bundle$`), []string{"channel.no-entries", "package.default-channel-missing", "package.no-channels"}},
	{regexp.MustCompile(`^default channel must be set$`), []string{"package.default-channel-empty"}},
	{regexp.MustCompile(`^package must contain at least one channel$`), []string{"package.no-channels"}},
	{regexp.MustCompile(`^default channel ".*" not found in channels list$`), []string{"package.default-channel-missing"}},
	{regexp.MustCompile(`^multiple channel heads found in graph: `), []string{"channel.multiple-heads"}},
	{regexp.MustCompile(`^no channel head found in graph$`), []string{"channel.no-head", "channel.replaces-cycle"}},
	{regexp.MustCompile(`^detected cycle in replaces chain of upgrade graph: `), []string{"channel.replaces-cycle"}},
	{regexp.MustCompile(`^channel contains one or more stranded bundles: `), []string{"channel.stranded"}},
	{regexp.MustCompile(`^skip\[\d+\] is empty$`), []string{"channel.skip-empty"}},
	{regexp.MustCompile(`^bundle image must be set$`), []string{"bundle.image-empty"}},
	{regexp.MustCompile(`^must be exactly one property with type "olm.package"$`), []string{"bundle.package-property-missing", "bundle.package-property-multiple"}},
	{regexp.MustCompile(`^duplicate versions found in bundles: `), []string{"bundle.version-duplicate"}},
	{regexp.MustCompile(`^invalid deprecation: message must be set$`), []string{"deprecation.message-empty"}},
	{regexp.MustCompile(`^name must be set$`), []string{"bundle.name-empty"}},
	{regexp.MustCompile(`^package name must not be empty$`), []string{"package.name-empty"}},
	{regexp.MustCompile(`^channel name must not be empty$`), []string{"channel.name-empty"}},
}

// rulesFor returns the rule ids that answer an opm message, or nil.
func rulesFor(msg string) []string {
	for _, r := range opmMessageRules {
		if r.pattern.MatchString(msg) {
			return r.rules
		}
	}
	return nil
}

// opmGolden is a parsed opm.golden file.
type opmGolden struct {
	exit     int
	messages []string // opm's error messages, one per leaf of its error tree
}

func (g opmGolden) valid() bool { return g.exit == 0 }

// logrusMsg finds the msg="…" field of a logrus text line.
var logrusMsg = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*")`)

func readOPMGolden(path string) (opmGolden, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return opmGolden{}, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var g opmGolden
	if _, err := fmt.Sscanf(lines[0], "exit %d", &g.exit); err != nil {
		return opmGolden{}, fmt.Errorf("%s: first line %q is not \"exit N\"", path, lines[0])
	}
	for _, line := range lines[1:] {
		m := logrusMsg.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		msg, err := strconv.Unquote(m[1])
		if err != nil {
			return opmGolden{}, fmt.Errorf("%s: msg %s: %v", path, m[1], err)
		}
		g.messages = append(g.messages, opmLeaves(msg)...)
	}
	if g.exit != 0 && len(g.messages) == 0 {
		return opmGolden{}, fmt.Errorf("%s: opm failed but printed no msg=", path)
	}
	return g, nil
}

// opmLeaves splits one opm error into the messages we must answer. opm prints
// model validation as a tree ("invalid index:" / "├── invalid package …:" /
// "└── leaf"); the leaves are the findings, the inner lines only say where.
// Any other error is one message, whose first line says what is wrong (later
// lines quote the offending input) — except "object '<blob>\n' is missing
// root schema field", which quotes its blob in the middle.
func opmLeaves(msg string) []string {
	if strings.HasPrefix(msg, "object '") {
		return []string{strings.ReplaceAll(msg, "\n", "")}
	}
	if !strings.HasPrefix(msg, "invalid index:") {
		first, _, _ := strings.Cut(msg, "\n")
		return []string{first}
	}
	var leaves []string
	for _, line := range strings.Split(msg, "\n")[1:] {
		line = strings.TrimLeft(line, "│├└─ \u00a0")
		if line == "" || strings.HasSuffix(line, ":") {
			continue
		}
		leaves = append(leaves, line)
	}
	return leaves
}

// caseExpectation is a parsed expect file.
type caseExpectation struct {
	valid  bool
	reason string
	rules  []string
}

func readExpect(path string) (*caseExpectation, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var e caseExpectation
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case n == 1:
			verdict, reason, _ := strings.Cut(line, " ")
			switch verdict {
			case "valid":
				e.valid = true
			case "invalid":
			default:
				return nil, fmt.Errorf("%s:1: want \"valid\" or \"invalid\" and a reason, got %q", path, line)
			}
			e.reason = reason
			if e.reason == "" {
				return nil, fmt.Errorf("%s:1: the verdict needs a one-line reason", path)
			}
		case strings.HasPrefix(line, "rules:"):
			e.rules = append(e.rules, strings.Fields(strings.TrimPrefix(line, "rules:"))...)
		case line != "":
			return nil, fmt.Errorf("%s:%d: unexpected line %q (want \"rules: id…\")", path, n, line)
		}
	}
	return &e, sc.Err()
}

func TestOPMParity(t *testing.T) {
	entries, err := os.ReadDir(opmParityCases)
	if err != nil {
		t.Fatalf("reading the corpus: %v", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < 80 {
		t.Fatalf("corpus has %d cases, want at least 80", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(opmParityCases, name)
			golden, err := readOPMGolden(filepath.Join(dir, "opm.golden"))
			if err != nil {
				t.Fatalf("%v (run scripts/record-opm-golden.sh %s)", err, name)
			}
			expect, err := readExpect(filepath.Join(dir, "expect"))
			if err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := catalog.LoadDir(ctx, filepath.Join(dir, "catalog"), catalog.DefaultLimits())
			if err != nil {
				t.Fatalf("LoadDir: %v", err)
			}
			findings := catalog.Validate(c, catalog.ValidateOptions{})
			errorRules, warningRules := map[string]bool{}, map[string]bool{}
			for _, f := range findings {
				switch f.Severity {
				case catalog.SeverityError:
					errorRules[f.Rule] = true
				case catalog.SeverityWarning:
					warningRules[f.Rule] = true
				}
			}
			gotValid := !catalog.HasErrors(findings)

			wantValid, source := golden.valid(), "opm v1.60.0"
			if expect != nil {
				wantValid, source = expect.valid, "expect ("+expect.reason+")"
			}
			if gotValid != wantValid {
				t.Errorf("verdict: got %s, want %s per %s\nopm says: %s\nwe say:\n%s",
					verdictWord(gotValid), verdictWord(wantValid), source,
					strings.Join(golden.messages, " | "), findingLines(findings))
			}

			warns, err := readRuleList(filepath.Join(dir, "warnings"))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range warns {
				if !warningRules[id] {
					t.Errorf("warnings names rule %s, got warning rules %v", id, sortedKeys(warningRules))
				}
			}

			if expect != nil {
				for _, id := range expect.rules {
					if !errorRules[id] {
						t.Errorf("expect names rule %s, got error rules %v", id, sortedKeys(errorRules))
					}
				}
				// opm's messages describe the behaviour we deliberately do not copy.
				return
			}
			for _, msg := range golden.messages {
				ids := rulesFor(msg)
				if ids == nil {
					t.Errorf("opm message %q matches no entry of opmMessageRules; add one", msg)
					continue
				}
				if !anyOf(errorRules, ids) {
					t.Errorf("opm says %q; want an error finding with rule %s, got error rules %v",
						msg, strings.Join(ids, " or "), sortedKeys(errorRules))
				}
			}
		})
	}
}

// TestOPMParityCorpusShape keeps the corpus honest: every case has its files,
// valid and invalid verdicts both occur, and every expect file stands for a
// real difference from opm.
func TestOPMParityCorpusShape(t *testing.T) {
	entries, err := os.ReadDir(opmParityCases)
	if err != nil {
		t.Fatalf("reading the corpus: %v", err)
	}
	var valid, invalid int
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("%s: stray file in the corpus root", e.Name())
			continue
		}
		dir := filepath.Join(opmParityCases, e.Name())
		for _, f := range []string{"about", "opm.golden"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
		}
		if st, err := os.Stat(filepath.Join(dir, "catalog")); err != nil || !st.IsDir() {
			t.Errorf("%s: no catalog directory", e.Name())
		}
		golden, err := readOPMGolden(filepath.Join(dir, "opm.golden"))
		if err != nil {
			t.Error(err)
			continue
		}
		if golden.valid() {
			valid++
		} else {
			invalid++
		}
		expect, err := readExpect(filepath.Join(dir, "expect"))
		if err != nil {
			t.Error(err)
			continue
		}
		// An expect that agrees with opm is fine only when it carries rules
		// (we agree on the verdict for a different reason, e.g. symlinks).
		if expect != nil && expect.valid == golden.valid() && len(expect.rules) == 0 {
			t.Errorf("%s: expect says %s as opm does; drop it or name the rules that differ", e.Name(), verdictWord(expect.valid))
		}
		// Where expect cites newer opm, the newer opm recorded with
		// OPM_NEWER (if any) must give the same verdict.
		newer, err := readOPMGolden(filepath.Join(dir, "opm-newer.golden"))
		switch {
		case os.IsNotExist(err):
		case err != nil:
			t.Error(err)
		case expect != nil && strings.Contains(expect.reason, "newer opm") && newer.valid() != expect.valid:
			t.Errorf("%s: expect says %s citing newer opm, but opm-newer.golden says %s",
				e.Name(), verdictWord(expect.valid), verdictWord(newer.valid()))
		}
	}
	if valid < 20 || invalid < 20 {
		t.Errorf("corpus has %d valid and %d invalid cases per opm, want at least 20 of each", valid, invalid)
	}
}

// TestOPMMessageRulesExist checks that every rule id the mapping (and every
// expect file) names is a rule this package declares.
func TestOPMMessageRulesExist(t *testing.T) {
	known := map[string]bool{}
	for _, r := range catalog.Rules() {
		known[r.ID] = true
	}
	for _, m := range opmMessageRules {
		for _, id := range m.rules {
			if !known[id] {
				t.Errorf("opmMessageRules: pattern %q names unknown rule %q", m.pattern, id)
			}
		}
	}
	paths, err := filepath.Glob(filepath.Join(opmParityCases, "*", "expect"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		e, err := readExpect(p)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, id := range e.rules {
			if !known[id] {
				t.Errorf("%s names unknown rule %q", p, id)
			}
		}
	}
	paths, err = filepath.Glob(filepath.Join(opmParityCases, "*", "warnings"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		ids, err := readRuleList(p)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, id := range ids {
			if !known[id] {
				t.Errorf("%s names unknown rule %q", p, id)
			}
		}
	}
}

// readRuleList reads a file of "rules: id id…" lines; a missing file is an
// empty list.
func readRuleList(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "rules:")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"rules: id…\", got %q", path, n+1, line)
		}
		ids = append(ids, strings.Fields(rest)...)
	}
	return ids, nil
}

func TestOPMLeaves(t *testing.T) {
	tests := []struct {
		msg  string
		want []string
	}{
		{"duplicate package \"foo\"", []string{"duplicate package \"foo\""}},
		{"json: cannot unmarshal array\n[ <== \n  1\n]", []string{"json: cannot unmarshal array"}},
		{"invalid index:\n└── invalid package \"foo\":\n    └── invalid channel \"stable\":\n        ├── multiple channel heads found in graph: a, b\n        ├── invalid bundle \"a\":\n        │   └── skip[0] is empty\n        └── invalid bundle \"b\":\n            └── bundle image must be set",
			[]string{"multiple channel heads found in graph: a, b", "skip[0] is empty", "bundle image must be set"}},
	}
	for _, tt := range tests {
		got := opmLeaves(tt.msg)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("opmLeaves(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func verdictWord(valid bool) string {
	if valid {
		return "valid"
	}
	return "invalid"
}

func anyOf(set map[string]bool, ids []string) bool {
	for _, id := range ids {
		if set[id] {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func findingLines(fs []catalog.Finding) string {
	if len(fs) == 0 {
		return "  (no findings)"
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s\n", f.Severity, f)
	}
	return strings.TrimRight(b.String(), "\n")
}
