package promote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	sigsyaml "sigs.k8s.io/yaml"
	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// Strategy is a package's fbc.version_promotion_strategy: what happens to it when the repository gains a
// catalog for a new OpenShift version.
type Strategy string

// The strategies the community's ci.yaml knows.
const (
	// Never: the package is not promoted.
	Never Strategy = "never"
	// ReviewNeeded: a pull request the package's owners approve (/approve) before it merges.
	ReviewNeeded Strategy = "review-needed"
	// Always: a pull request derived from the default branch, merged without review.
	Always Strategy = "always"
)

// DefaultStrategy is the strategy of a package whose ci.yaml does not name one: review-needed, as the
// community's promotion script has it (its ci.yaml documentation still says never). Nothing merges without
// an owner's approval, and nothing is left behind unasked.
const DefaultStrategy = ReviewNeeded

// MaxCIYamlBytes bounds the ci.yaml read (the community's are under 2 KiB).
const MaxCIYamlBytes = 1 << 20

// maxMappings bounds fbc.catalog_mapping entries and the catalog names of one entry.
const maxMappings = 1000

// CIError is a problem of a ci.yaml, on its line.
type CIError struct {
	File       string
	Line, Col  int
	Message    string
	Suggestion string
}

func (e *CIError) Error() string {
	s := fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Message)
	if e.Suggestion != "" {
		s += " (" + e.Suggestion + ")"
	}
	return s
}

// CIConfig is what promotion reads of a package's ci.yaml.
type CIConfig struct {
	File string
	// Enabled is fbc.enabled (absent: true when fbc is there, as the mapping reader has it).
	Enabled bool
	// Strategy is fbc.version_promotion_strategy, DefaultStrategy when absent; StrategyLine is its line
	// (0 when absent).
	Strategy     Strategy
	StrategyLine int
	// Mappings are fbc.catalog_mapping's entries, in file order.
	Mappings []CIMapping
}

// CIMapping is one entry of fbc.catalog_mapping: a template and the catalogs it renders into.
type CIMapping struct {
	Template string // template_name: a file of catalog-templates/
	Type     string // olm.template.basic, olm.semver or ""
	Catalogs []string
	Line     int
}

// MappingOf is the entry whose catalogs include name, or nil.
func (c *CIConfig) MappingOf(name string) *CIMapping {
	for i := range c.Mappings {
		for _, n := range c.Mappings[i].Catalogs {
			if n == name {
				return &c.Mappings[i]
			}
		}
	}
	return nil
}

// validCatalogName is what promotion accepts as a catalog directory name: what the community uses (v4.22)
// and anything plain like it; it is written into ci.yaml unquoted.
var validCatalogName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,62}$`) })

// ParseCI reads a ci.yaml. Every problem is a *CIError naming the file and line.
func ParseCI(file string, data []byte) (*CIConfig, error) {
	cfg, err := parseCI(file, data)
	var ce *CIError
	if errors.As(err, &ce) {
		// The YAML parser counts a lone CR as a line break, editors and GitHub do not: a position past the
		// file's last line is reported on its last.
		if lines := bytes.Count(data, []byte("\n")) + 1; ce.Line > lines {
			ce.Line, ce.Col = lines, 1
		}
		if ce.Line < 1 {
			ce.Line, ce.Col = 1, 1
		}
	}
	return cfg, err
}

func parseCI(file string, data []byte) (*CIConfig, error) {
	if len(data) > MaxCIYamlBytes {
		return nil, &CIError{File: file, Line: 1, Col: 1, Message: fmt.Sprintf("the file is %d bytes, more than the %d read", len(data), MaxCIYamlBytes)}
	}
	cfg := &CIConfig{File: file, Strategy: DefaultStrategy}
	root, err := parseNode(file, data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return cfg, nil
	}
	bad := func(n *yaml.Node, hint, format string, a ...any) error {
		return &CIError{File: file, Line: n.Line, Col: n.Column, Message: fmt.Sprintf(format, a...), Suggestion: hint}
	}
	if root.Kind != yaml.MappingNode {
		return nil, bad(root, "a ci.yaml is a mapping of keys (reviewers, fbc, ...)", "the document is a %s, not a mapping", kindName(root))
	}
	fbc := lookup(root, "fbc")
	if fbc == nil || isNull(fbc) {
		return cfg, nil
	}
	if fbc.Kind != yaml.MappingNode {
		return nil, bad(fbc, "write fbc: followed by indented keys", "fbc is a %s, not a mapping", kindName(fbc))
	}
	cfg.Enabled = true
	if en := lookup(fbc, "enabled"); en != nil && !isNull(en) {
		var b bool
		if en.Kind != yaml.ScalarNode || en.Decode(&b) != nil {
			return nil, bad(en, "write true or false", "fbc.enabled is %q, not a boolean", en.Value)
		}
		cfg.Enabled = b
	}
	if st := lookup(fbc, "version_promotion_strategy"); st != nil && !isNull(st) {
		if st.Kind != yaml.ScalarNode {
			return nil, bad(st, "write never, review-needed or always", "fbc.version_promotion_strategy is a %s, not a string", kindName(st))
		}
		switch s := Strategy(st.Value); s {
		case Never, ReviewNeeded, Always:
			cfg.Strategy, cfg.StrategyLine = s, st.Line
		default:
			return nil, bad(st, "write never, review-needed or always", "fbc.version_promotion_strategy %q is not a strategy", st.Value)
		}
	}
	cm := lookup(fbc, "catalog_mapping")
	if cm == nil || isNull(cm) {
		return cfg, nil
	}
	if cm.Kind != yaml.SequenceNode {
		return nil, bad(cm, "write a list of {template_name, type, catalog_names}", "fbc.catalog_mapping is a %s, not a list", kindName(cm))
	}
	if len(cm.Content) > maxMappings {
		return nil, bad(cm, "", "fbc.catalog_mapping has %d entries, more than %d", len(cm.Content), maxMappings)
	}
	for i, e := range cm.Content {
		if e.Kind != yaml.MappingNode {
			return nil, bad(e, "write {template_name, type, catalog_names}", "fbc.catalog_mapping[%d] is a %s, not a mapping", i, kindName(e))
		}
		m := CIMapping{Line: e.Line}
		tn := lookup(e, "template_name")
		if tn == nil || tn.Kind != yaml.ScalarNode || tn.Value == "" || isNull(tn) {
			at := e
			if tn != nil {
				at = tn
			}
			return nil, bad(at, "name a file of the package's catalog-templates/", "fbc.catalog_mapping[%d] has no template_name", i)
		}
		if strings.ContainsAny(tn.Value, "/\\") || tn.Value == "." || tn.Value == ".." {
			return nil, bad(tn, "name a file of the package's catalog-templates/", "fbc.catalog_mapping[%d].template_name %q is not a file name", i, tn.Value)
		}
		m.Template = tn.Value
		if ty := lookup(e, "type"); ty != nil && !isNull(ty) {
			switch ty.Value {
			case "olm.template.basic", "olm.semver":
				m.Type = ty.Value
			default:
				return nil, bad(ty, "write olm.template.basic or olm.semver", "fbc.catalog_mapping[%d].type %q is not a template type", i, ty.Value)
			}
		}
		names := lookup(e, "catalog_names")
		if names == nil {
			if lookup(e, "catalogs_names") != nil {
				return nil, bad(e, "the key is catalog_names", "fbc.catalog_mapping[%d] spells catalog_names as catalogs_names", i)
			}
			return nil, bad(e, "list the catalogs/ directories the template renders into", "fbc.catalog_mapping[%d] has no catalog_names", i)
		}
		if !isNull(names) {
			if names.Kind != yaml.SequenceNode {
				return nil, bad(names, "write a list: [v4.21, v4.22]", "fbc.catalog_mapping[%d].catalog_names is a %s, not a list", i, kindName(names))
			}
			if len(names.Content) > maxMappings {
				return nil, bad(names, "", "fbc.catalog_mapping[%d].catalog_names has %d names, more than %d", i, len(names.Content), maxMappings)
			}
			for _, n := range names.Content {
				if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
					return nil, bad(n, `quote it: "v4.22"`, "catalog name %q is not a string (YAML reads it as %s)", n.Value, strings.TrimPrefix(n.Tag, "!!"))
				}
				if n.Value == "" || strings.ContainsAny(n.Value, "/\\") || n.Value == "." || n.Value == ".." {
					return nil, bad(n, "name a directory of catalogs/", "catalog name %q is not a directory name", n.Value)
				}
				m.Catalogs = append(m.Catalogs, n.Value)
			}
		}
		cfg.Mappings = append(cfg.Mappings, m)
	}
	return cfg, nil
}

// parseNode parses one YAML document into its root node (nil for an empty document).
func parseNode(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &CIError{File: file, Line: extra.Line, Col: extra.Column, Message: "the file holds more than one YAML document", Suggestion: "keep one document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	if err := checkAliases(file, doc.Content[0], 0); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// checkAliases refuses aliases (ci.yaml has no need of them, and they would make the text edit ambiguous)
// and bounds the nesting.
func checkAliases(file string, n *yaml.Node, depth int) error {
	if depth > 100 {
		return &CIError{File: file, Line: n.Line, Col: n.Column, Message: "nested more than 100 levels deep"}
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return &CIError{File: file, Line: n.Line, Col: n.Column, Message: "anchors and aliases are not read in ci.yaml", Suggestion: "write the value out"}
	}
	for _, c := range n.Content {
		if err := checkAliases(file, c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// yamlError turns a parser error into a CIError on its line (ParseCI keeps the line within the file).
func yamlError(file string, err error) error {
	msg := err.Error()
	line := 1
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		fmt.Sscanf(m[1], "%d", &line)
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &CIError{File: file, Line: line, Col: 1, Message: "not valid YAML: " + msg}
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			found = m.Content[i+1] // the last of duplicate keys wins, as the community's reader has it
		}
	}
	return found
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// AddCatalogName adds the catalog name to, in ci.yaml's fbc.catalog_mapping, the entry whose catalog_names
// hold from, and returns the new file. The file is edited as text — one new list item after the entry's last
// name, spelled like the from item (quotes included), or ", name" inside a flow list — so comments, key order
// and indentation stay and the difference is that one name. The edit is checked by reading both files: the
// new one must hold exactly the old values plus the name; when a text edit cannot be made so, the document is
// written anew (comments kept, layout normalised). changed is false when an entry names to already.
func AddCatalogName(file string, src []byte, from, to string) (out []byte, changed bool, err error) {
	if !validCatalogName().MatchString(to) {
		return nil, false, fmt.Errorf("%q is not a catalog name promotion writes (letters, digits, '.', '-', '_', starting with a letter)", to)
	}
	cfg, err := ParseCI(file, src)
	if err != nil {
		return nil, false, err
	}
	if cfg.MappingOf(to) != nil {
		return src, false, nil
	}
	root, err := parseNode(file, src)
	if err != nil {
		return nil, false, err
	}
	seq, item := namesHolding(root, from)
	if seq == nil {
		return nil, false, fmt.Errorf("%s: no fbc.catalog_mapping entry names %s", file, from)
	}
	want, err := expected(src, from, to)
	if err != nil {
		return nil, false, err
	}
	if edited, ok := editText(src, seq, item, to); ok && sameValue(edited, want) {
		return edited, true, nil
	}
	// Written anew: the node gains the name and the document is encoded again.
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: to, Style: item.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)}
	seq.Content = append(seq.Content, n)
	var buf bytes.Buffer
	if bytes.HasPrefix(bytes.TrimLeft(src, "\ufeff"), []byte("---")) {
		buf.WriteString("---\n")
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, false, fmt.Errorf("%s: writing the new mapping: %w", file, err)
	}
	_ = enc.Close()
	if !sameValue(buf.Bytes(), want) {
		return nil, false, fmt.Errorf("%s: the mapping cannot be edited faithfully; add %s under the catalog_names that hold %s by hand", file, to, from)
	}
	return buf.Bytes(), true, nil
}

// namesHolding finds, in fbc.catalog_mapping, the catalog_names list holding name, and that item.
func namesHolding(root *yaml.Node, name string) (seq, item *yaml.Node) {
	cm := lookup(lookup(root, "fbc"), "catalog_mapping")
	if cm == nil || cm.Kind != yaml.SequenceNode {
		return nil, nil
	}
	for _, e := range cm.Content {
		names := lookup(e, "catalog_names")
		if names == nil || names.Kind != yaml.SequenceNode {
			continue
		}
		for _, n := range names.Content {
			if n.Kind == yaml.ScalarNode && n.Value == name {
				return names, n
			}
		}
	}
	return nil, nil
}

// expected is the value the edited file must hold: src's, with to appended to the names holding from.
func expected(src []byte, from, to string) (any, error) {
	var v any
	if err := sigsyaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	root, _ := v.(map[string]any)
	fbc, _ := root["fbc"].(map[string]any)
	cm, _ := fbc["catalog_mapping"].([]any)
	for _, e := range cm {
		em, _ := e.(map[string]any)
		names, _ := em["catalog_names"].([]any)
		for _, n := range names {
			if n == from {
				em["catalog_names"] = append(names, to)
				return v, nil
			}
		}
	}
	return nil, fmt.Errorf("no fbc.catalog_mapping entry names %s", from)
}

func sameValue(data []byte, want any) bool {
	var got any
	if err := sigsyaml.Unmarshal(data, &got); err != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}

// editText inserts to into the list seq as text; like is the item whose spelling the new one copies.
func editText(src []byte, seq, like *yaml.Node, to string) ([]byte, bool) {
	if len(seq.Content) == 0 {
		return nil, false
	}
	last := seq.Content[len(seq.Content)-1]
	lines := bytes.SplitAfter(src, []byte("\n"))
	if last.Line < 1 || last.Line > len(lines) || like.Line < 1 || like.Line > len(lines) {
		return nil, false
	}
	value := quoteLike(like, to)
	if seq.Style&yaml.FlowStyle != 0 {
		line := lines[last.Line-1]
		start, ok := byteColumn(line, last.Column)
		if !ok {
			return nil, false
		}
		end, ok := scalarEnd(line, start, last.Style)
		if !ok {
			return nil, false
		}
		off := 0
		for _, l := range lines[:last.Line-1] {
			off += len(l)
		}
		at := off + end
		out := make([]byte, 0, len(src)+len(value)+2)
		out = append(out, src[:at]...)
		out = append(out, ", "+value...)
		return append(out, src[at:]...), true
	}
	// Block list: a new line after the last item's, with the from item's dash and spacing.
	lline := lines[like.Line-1]
	lstart, ok := byteColumn(lline, like.Column)
	if !ok {
		return nil, false
	}
	dash := bytes.LastIndexByte(lline[:lstart], '-')
	if dash < 0 || strings.TrimLeft(string(lline[:dash]), " ") != "" || strings.Trim(string(lline[dash+1:lstart]), " ") != "" {
		return nil, false
	}
	lastLine := lines[last.Line-1]
	lastStart, ok := byteColumn(lastLine, last.Column)
	if !ok {
		return nil, false
	}
	if end, ok := scalarEnd(lastLine, lastStart, last.Style); !ok || strings.TrimSpace(stripComment(string(lastLine[end:]))) != "" {
		return nil, false // the last item goes on past its line
	}
	lastDash := bytes.LastIndexByte(lastLine[:lastStart], '-')
	if lastDash != dash {
		return nil, false // items not aligned: leave it to the rewrite
	}
	eol := "\n"
	if bytes.HasSuffix(lastLine, []byte("\r\n")) {
		eol = "\r\n"
	}
	newLine := string(lline[:lstart]) + value + eol
	var out bytes.Buffer
	for i, l := range lines {
		out.Write(l)
		if i == last.Line-1 {
			if !bytes.HasSuffix(l, []byte("\n")) {
				out.WriteString(eol)
			}
			out.WriteString(newLine)
		}
	}
	return out.Bytes(), true
}

func stripComment(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.Index(s, "#"); i >= 0 && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
		return s[:i]
	}
	return s
}

// quoteLike spells v as like is spelt: in double or single quotes, or plain.
func quoteLike(like *yaml.Node, v string) string {
	switch {
	case like.Style&yaml.DoubleQuotedStyle != 0:
		return `"` + v + `"`
	case like.Style&yaml.SingleQuotedStyle != 0:
		return "'" + v + "'"
	}
	return v
}

// byteColumn turns the parser's 1-based column (in characters) into a byte offset of line.
func byteColumn(line []byte, col int) (int, bool) {
	off := 0
	for c := 1; c < col; c++ {
		if off >= len(line) {
			return 0, false
		}
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off, off <= len(line)
}

// scalarEnd is the byte offset just after the scalar starting at start on line (a single-line scalar).
func scalarEnd(line []byte, start int, style yaml.Style) (int, bool) {
	if start >= len(line) {
		return 0, false
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		if line[start] != '"' {
			return 0, false
		}
		for i := start + 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return i + 1, true
			}
		}
		return 0, false
	case style&yaml.SingleQuotedStyle != 0:
		if line[start] != '\'' {
			return 0, false
		}
		for i := start + 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, true
			}
		}
		return 0, false
	case style == 0 || style&yaml.FlowStyle != 0:
		i := start
		for i < len(line) {
			c := line[i]
			if c == ',' || c == ']' || c == '\n' || c == '\r' || c == '}' {
				break
			}
			if (c == ' ' || c == '\t') && i+1 < len(line) && line[i+1] == '#' {
				break
			}
			i++
		}
		for i > start && (line[i-1] == ' ' || line[i-1] == '\t') {
			i--
		}
		return i, i > start
	}
	return 0, false
}
