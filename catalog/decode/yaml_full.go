package decode

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// yamlFull parses a chunk with goyaml.v3's node API and converts the tree to
// a Value, resolving scalars as goyaml.v2 (YAML 1.1) does, since that is what
// opm's sigs.k8s.io/yaml uses. It handles everything YAML allows; yamlFast
// handles the common subset faster and defers here for the rest.
func (p *fileParser) yamlFull(c yamlChunk) (Value, bool) {
	// opm's line reader ends every line with '\n', the last one included.
	text := []byte(c.text)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text, '\n')
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		line, msg := yamlErrorLine(err.Error())
		if hasTabIndent(c.text, line) {
			msg += " (the line is indented with a tab: YAML allows only spaces)"
		}
		p.addf(ruleLoadYAMLSyntax, c.line+line-1, 0, "", "invalid YAML: %s", msg)
		return Value{}, false
	}
	if end := documentEndLine(c.text); end > 0 {
		p.addf(ruleLoadIgnoredContent, c.line+end-1, 1, "",
			"text after the document end marker '...' is ignored by opm (it reads one document per '---' piece); remove the marker or put '---' in its place")
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.addf(ruleLoadEmptyDocument, c.line, 1, "", "%s", emptyChunkMessage(c.text))
		return Value{}, false
	}
	conv := nodeConverter{p: p, lineBase: int32(c.line - 1), text: c.text}
	v := conv.value(doc.Content[0], 0)
	if conv.failed {
		return Value{}, false
	}
	return v, true
}

// yamlErrorLine takes "yaml: line N: msg" apart; line is 1 when absent.
func yamlErrorLine(s string) (int, string) {
	s = strings.TrimPrefix(s, "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 1 {
				return n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return 1, s
}

// nodeConverter turns one document's nodes into a Value.
type nodeConverter struct {
	p        *fileParser
	lineBase int32
	failed   bool
	// aliasDepth > 0 while expanding an alias; aliasNodes counts the values
	// produced that way and allNodes every value, to mirror goyaml.v2's
	// "excessive aliasing" check and bound the work.
	aliasDepth int
	aliasNodes int
	allNodes   int
	expanding  map[*yaml.Node]bool
	// text is the chunk, lineStarts the offsets of its lines (built on demand).
	text       string
	lineStarts []int
	lineFlags  []uint8
}

// nonSpecificTag reports whether the scalar n is written with the tag "!".
// goyaml.v3 resolves such a scalar as if it had no tag, but goyaml.v2 (opm's)
// keeps it a string, so the source is looked at.
func (c *nodeConverter) nonSpecificTag(n *yaml.Node) bool {
	if c.lineStarts == nil {
		c.indexLines()
	}
	if n.Line < 1 || n.Line > len(c.lineStarts) || c.lineFlags[n.Line-1]&lineHasBang == 0 {
		return false
	}
	rest := c.text[c.lineStarts[n.Line-1]:]
	if c.lineFlags[n.Line-1]&lineNonASCII == 0 {
		if n.Column-1 >= len(rest) {
			return false
		}
		rest = rest[n.Column-1:]
	} else {
		for col := 1; col < n.Column && len(rest) > 0; col++ {
			_, size := utf8.DecodeRuneInString(rest)
			rest = rest[size:]
		}
	}
	// The node starts at its properties; an anchor may come before the tag ("&a !").
	if len(rest) > 0 && rest[0] == '&' {
		i := 1
		for i < len(rest) && strings.IndexByte(" \t\r\n", rest[i]) < 0 {
			i++
		}
		for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
			i++
		}
		rest = rest[i:]
	}
	return len(rest) > 0 && rest[0] == '!' && (len(rest) == 1 || strings.IndexByte(" \t\r\n", rest[1]) >= 0)
}

const (
	lineHasBang uint8 = 1 << iota
	lineNonASCII
)

// indexLines records where each line of the chunk starts and what it holds.
func (c *nodeConverter) indexLines() {
	c.lineStarts = append(c.lineStarts, 0)
	c.lineFlags = append(c.lineFlags, 0)
	t := c.text
	for i := 0; i < len(t); i++ {
		// goyaml.v3 counts lines at \n, \r\n, a lone \r, NEL, LS and PS.
		brk := 0
		switch {
		case t[i] == '\n', t[i] == '\r' && (i+1 == len(t) || t[i+1] != '\n'):
			brk = 1
		case t[i] == 0xC2 && i+1 < len(t) && t[i+1] == 0x85:
			brk = 2
		case t[i] == 0xE2 && i+2 < len(t) && t[i+1] == 0x80 && (t[i+2] == 0xA8 || t[i+2] == 0xA9):
			brk = 3
		}
		if brk > 0 {
			i += brk - 1
			c.lineStarts = append(c.lineStarts, i+1)
			c.lineFlags = append(c.lineFlags, 0)
			continue
		}
		switch ch := t[i]; {
		case ch == '!':
			c.lineFlags[len(c.lineFlags)-1] |= lineHasBang
		case ch >= utf8.RuneSelf:
			c.lineFlags[len(c.lineFlags)-1] |= lineNonASCII
		}
	}
}

func (c *nodeConverter) fail(n *yaml.Node, rule, format string, args ...any) {
	if c.failed {
		return
	}
	c.failed = true
	c.p.addf(rule, int(c.lineBase)+n.Line, n.Column, "", format, args...)
}

func (c *nodeConverter) count(n *yaml.Node) bool {
	c.allNodes++
	if c.aliasDepth > 0 {
		c.aliasNodes++
		c.p.aliasValues++
		if c.p.aliasValues > c.p.lim.MaxAliasExpansionPerFile {
			c.fail(n, ruleLoadAliasExpansion, "aliases expand to more than %d values in this file (summed over its documents); the document was not read", c.p.lim.MaxAliasExpansionPerFile)
			return false
		}
		if spent := c.p.lim.AliasSpent; spent != nil && spent.Add(1) > c.p.lim.MaxAliasExpansionPerRead {
			c.fail(n, ruleLoadAliasExpansion, "aliases expand to more than %d values in the files read together with this one; the document was not read", c.p.lim.MaxAliasExpansionPerRead)
			return false
		}
		if c.aliasNodes > c.p.lim.MaxAliasExpansion {
			c.fail(n, ruleLoadAliasExpansion, "aliases expand to more than %d values in this document; it was not read", c.p.lim.MaxAliasExpansion)
			return false
		}
		if c.aliasNodes > 100 && c.allNodes > 1000 && float64(c.aliasNodes)/float64(c.allNodes) > allowedAliasRatio(c.allNodes) {
			c.fail(n, ruleLoadAliasExpansion, "document is mostly alias expansions (goyaml.v2, which opm uses, refuses it: \"document contains excessive aliasing\")")
			return false
		}
	}
	return true
}

// allowedAliasRatio is goyaml.v2's bound on the share of values produced by aliases.
func allowedAliasRatio(decodeCount int) float64 {
	const low, high = 400000, 4000000
	switch {
	case decodeCount <= low:
		return 0.99
	case decodeCount >= high:
		return 0.10
	}
	return 0.99 - 0.89*(float64(decodeCount-low)/float64(high-low))
}

func (c *nodeConverter) pos(n *yaml.Node) (int32, int32) {
	return c.lineBase + int32(n.Line), int32(n.Column)
}

func (c *nodeConverter) value(n *yaml.Node, depth int) Value {
	if c.failed || !c.count(n) {
		return Value{}
	}
	line, col := c.pos(n)
	switch n.Kind {
	case yaml.AliasNode:
		return c.alias(n, depth)
	case yaml.ScalarNode:
		v := c.scalar(n)
		v.Line, v.Col = line, col
		return v
	case yaml.SequenceNode:
		if depth+1 > c.p.lim.MaxDepth {
			c.fail(n, ruleLoadTooDeep, "values nest deeper than %d levels; the document was not read", c.p.lim.MaxDepth)
			return Value{}
		}
		var items []Value
		if len(n.Content) > 0 {
			items = make([]Value, 0, len(n.Content))
		}
		for _, item := range n.Content {
			items = append(items, c.value(item, depth+1))
		}
		v := arrayValue(items)
		v.Line, v.Col = line, col
		return v
	case yaml.MappingNode:
		if depth+1 > c.p.lim.MaxDepth {
			c.fail(n, ruleLoadTooDeep, "values nest deeper than %d levels; the document was not read", c.p.lim.MaxDepth)
			return Value{}
		}
		var fields []Field
		var keys keyIndex
		c.mapping(&fields, &keys, n, depth, false)
		v := objectValue(c.p.slabs.fields(fields))
		v.Line, v.Col = line, col
		return v
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return c.value(n.Content[0], depth)
		}
	}
	return Value{Kind: KindNull, Line: line, Col: col}
}

func (c *nodeConverter) alias(n *yaml.Node, depth int) Value {
	if n.Alias == nil {
		c.fail(n, ruleLoadYAMLSyntax, "unknown anchor %q referenced (anchors only work inside one document)", n.Value)
		return Value{}
	}
	if c.expanding[n.Alias] {
		c.fail(n, ruleLoadYAMLSyntax, "anchor %q value contains itself", n.Value)
		return Value{}
	}
	if c.expanding == nil {
		c.expanding = map[*yaml.Node]bool{}
	}
	c.expanding[n.Alias] = true
	c.aliasDepth++
	v := c.value(n.Alias, depth)
	c.aliasDepth--
	delete(c.expanding, n.Alias)
	return v
}

// mapping adds the pairs of n to v. merged is true for a mapping merged in by
// "<<", whose keys override silently (as goyaml.v2 sets them into its map).
func (c *nodeConverter) mapping(v *[]Field, keys *keyIndex, n *yaml.Node, depth int, merged bool) {
	for i := 0; i+1 < len(n.Content) && !c.failed; i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMergeKey(kn) {
			c.merge(v, keys, vn, depth)
			continue
		}
		if !c.count(kn) {
			return
		}
		if n.Style&yaml.FlowStyle == 0 && kn.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 && c.keyTooLong(kn) {
			// goyaml.v3 takes it; goyaml.v2 (opm's) gives up on a simple key whose ':' is more than 1024
			// characters after its start, as it already does for plain keys.
			c.fail(kn, ruleLoadYAMLSyntax, "invalid YAML: could not find expected ':' (a key in block context is at most %d characters long, its quotes included)", maxSimpleKeyChars)
			return
		}
		key, ok := c.key(kn)
		if !ok {
			return
		}
		kl, kc := c.pos(kn)
		var val Value
		if next := i + 2; vn.Kind == yaml.ScalarNode && vn.Value == "" &&
			((next < len(n.Content) && vn.Line == n.Content[next].Line && vn.Column == n.Content[next].Column) ||
				(vn.Line > kn.Line && vn.Column < n.Column)) {
			// An explicit key ("? k") with no value, then a key with properties ("! k2:"): goyaml.v3 places
			// the empty value where the next key starts and gives it that key's tag; goyaml.v2 (opm's) gives
			// the tag to the next key, and the value is null. The same holds when the properties stand
			// left of the mapping (" ? k\n!"): they belong to no value of it, and the value is null.
			l, col := c.pos(vn)
			val = Value{Kind: KindNull, Line: l, Col: col}
		} else {
			val = c.value(vn, depth+1)
		}
		if c.failed {
			return
		}
		c.p.setField(v, 0, keys, Field{Key: key, KeyLine: kl, KeyCol: kc, Value: val}, !merged)
	}
}

func isMergeKey(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "<<" && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		(n.Style&yaml.TaggedStyle == 0 || n.Tag == "!!merge")
}

// merge applies a "<<" value: a mapping, an alias of one, or a sequence of
// them, of which earlier ones win (goyaml.v2 applies them last to first).
func (c *nodeConverter) merge(v *[]Field, keys *keyIndex, n *yaml.Node, depth int) {
	target := n
	if target.Kind == yaml.AliasNode {
		if target.Alias == nil {
			c.fail(n, ruleLoadYAMLSyntax, "unknown anchor %q referenced (anchors only work inside one document)", n.Value)
			return
		}
		target = target.Alias
	}
	switch target.Kind {
	case yaml.MappingNode:
		c.mergeOne(v, keys, n, depth)
	case yaml.SequenceNode:
		for i := len(target.Content) - 1; i >= 0 && !c.failed; i-- {
			item := target.Content[i]
			t := item
			if t.Kind == yaml.AliasNode && t.Alias != nil {
				t = t.Alias
			}
			if t.Kind != yaml.MappingNode {
				c.fail(item, ruleLoadYAMLSyntax, "map merge requires map or sequence of maps as the value")
				return
			}
			c.mergeOne(v, keys, item, depth)
		}
	default:
		c.fail(n, ruleLoadYAMLSyntax, "map merge requires map or sequence of maps as the value")
	}
}

func (c *nodeConverter) mergeOne(v *[]Field, keys *keyIndex, n *yaml.Node, depth int) {
	if n.Kind == yaml.AliasNode {
		if c.expanding[n.Alias] {
			c.fail(n, ruleLoadYAMLSyntax, "anchor %q value contains itself", n.Value)
			return
		}
		if c.expanding == nil {
			c.expanding = map[*yaml.Node]bool{}
		}
		c.expanding[n.Alias] = true
		c.aliasDepth++
		c.mapping(v, keys, n.Alias, depth, true)
		c.aliasDepth--
		delete(c.expanding, n.Alias)
		return
	}
	c.mapping(v, keys, n, depth, true)
}

// key converts a mapping key as sigs.k8s.io/yaml does: strings stay, numbers
// and booleans become their text, anything else is refused.
func (c *nodeConverter) key(n *yaml.Node) (string, bool) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		c.fail(n, ruleLoadUnsupportedKey, "a mapping key is a %s, which JSON cannot hold", kindWord(n.Kind))
		return "", false
	}
	if !plainScalar(n) {
		v := c.scalar(n)
		switch {
		case c.failed:
			return "", false
		case v.Kind == KindNull:
			c.fail(n, ruleLoadUnsupportedKey, "mapping key %q is null in YAML, which JSON cannot hold (opm refuses the file)", n.Value)
			return "", false
		}
		return v.Str(), true
	}
	if c.nonSpecificTag(n) {
		return n.Value, true
	}
	s, problem := yamlKeyString(n.Value)
	if problem != "" {
		c.fail(n, ruleLoadUnsupportedKey, "mapping key %q %s, which opm's YAML-to-JSON conversion refuses", n.Value, problem)
		return "", false
	}
	return s, true
}

func kindWord(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	}
	return "node"
}

func plainScalar(n *yaml.Node) bool {
	return n.Style&(yaml.TaggedStyle|yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// scalar resolves a scalar node as goyaml.v2 does.
func (c *nodeConverter) scalar(n *yaml.Node) Value {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!str":
			return scalarValue(KindString, n.Value)
		case "!!binary":
			data, err := base64.StdEncoding.DecodeString(n.Value)
			if err != nil {
				c.fail(n, ruleLoadYAMLSyntax, "!!binary value contains invalid base64 data")
				return Value{}
			}
			return scalarValue(KindString, strings.ToValidUTF8(string(data), "\uFFFD"))
		case "!!int", "!!float", "!!bool", "!!null", "!!timestamp":
			v, rule, msg := resolvePlainScalar(n.Value)
			if rule != "" {
				c.fail(n, rule, "%s", msg)
				return Value{}
			}
			want := map[string]Kind{"!!int": KindNumber, "!!float": KindNumber, "!!bool": KindBool, "!!null": KindNull, "!!timestamp": KindString}[n.Tag]
			if v.Kind != want {
				c.fail(n, ruleLoadYAMLSyntax, "cannot decode %q as a %s", n.Value, n.Tag)
				return Value{}
			}
			return v
		}
		// Other tags are ignored: the text is kept as a string.
		if n.Kind == yaml.ScalarNode {
			return scalarValue(KindString, n.Value)
		}
	}
	if !plainScalar(n) || c.nonSpecificTag(n) {
		return scalarValue(KindString, n.Value)
	}
	v, rule, msg := resolvePlainScalar(n.Value)
	if rule != "" {
		c.fail(n, rule, "%s", msg)
		return Value{}
	}
	return v
}

// hasTabIndent reports whether line n (1-based) of text starts with blanks
// holding a tab.
func hasTabIndent(text string, n int) bool {
	for i := 1; i < n; i++ {
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			return false
		}
		text = text[nl+1:]
	}
	for i := 0; i < len(text) && (text[i] == ' ' || text[i] == '\t'); i++ {
		if text[i] == '\t' {
			return true
		}
	}
	return false
}

// documentEndLine returns the line (1-based) of a "..." document end marker
// followed by more than blank or comment lines, or 0.
func documentEndLine(text string) int {
	line := 1
	for off := 0; off < len(text); line++ {
		nl := strings.IndexByte(text[off:], '\n')
		end := len(text)
		if nl >= 0 {
			end = off + nl
		}
		if ln := text[off:end]; strings.HasPrefix(ln, "...") && (len(ln) == 3 || ln[3] == ' ' || ln[3] == '\t' || ln[3] == '\r') {
			if end < len(text) && !blankYAML(text[end+1:]) {
				return line
			}
			return 0
		}
		off = end + 1
	}
	return 0
}

// maxSimpleKeyChars is goyaml.v2's bound on an implicit ("simple") key: its ':' may be at most this many
// characters after the key's first character.
const maxSimpleKeyChars = 1024

// keyTooLong reports whether the quoted key n, on one line, ends in a ':' more than maxSimpleKeyChars
// characters after its start. A key that spans lines is left to the parser.
func (c *nodeConverter) keyTooLong(n *yaml.Node) bool {
	if len(n.Value) < maxSimpleKeyChars-2 {
		return false // shorter than the bound even with quotes and escapes written out
	}
	if c.lineStarts == nil {
		c.indexLines()
	}
	if n.Line < 1 || n.Line > len(c.lineStarts) {
		return false
	}
	line := c.text[c.lineStarts[n.Line-1]:]
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	// Column counts characters from 1.
	start := 0
	for col := 1; col < n.Column && start < len(line); col++ {
		_, w := utf8.DecodeRuneInString(line[start:])
		start += w
	}
	rest := line[start:]
	if rest == "" {
		return false
	}
	quote := rest[0]
	i := 1
	for i < len(rest) {
		switch {
		case quote == '"' && rest[i] == '\\':
			i += 2
			continue
		case quote == '\'' && rest[i] == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
			i += 2
			continue
		case rest[i] == quote:
			i++
			for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
				i++
			}
			return utf8.RuneCountInString(rest[:i]) > maxSimpleKeyChars
		}
		i++
	}
	return false
}
