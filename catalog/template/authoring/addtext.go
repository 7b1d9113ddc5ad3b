package authoring

import (
	"bytes"
	"reflect"
	"sort"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// textEdits are the additions AddBundle makes to a template, kept as insertions into the file's text: new
// items of a block list (before an item of the list as it was, or after its last one) and new keys at the
// end of a block mapping. Only containers of the original document (nodes with a position) are edited; what
// goes inside a new node is written with it.
type textEdits struct {
	list []textEdit
}

type textEdit struct {
	container *yaml.Node
	// at is the index, among the container's original items, the nodes go before (sequences).
	at int
	// nodes are the new items (sequences), or the new key and its value (mappings).
	nodes []*yaml.Node
}

func (e *textEdits) insert(seq *yaml.Node, at int, nodes ...*yaml.Node) {
	if len(nodes) == 0 || seq.Line == 0 {
		return
	}
	e.list = append(e.list, textEdit{container: seq, at: at, nodes: nodes})
}

func (e *textEdits) addKey(m, k, v *yaml.Node) {
	if m.Line == 0 {
		return
	}
	e.list = append(e.list, textEdit{container: m, nodes: []*yaml.Node{k, v}})
}

// original lists the items of a sequence, or the keys of a mapping, that the document had.
func original(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	step := 1
	if n.Kind == yaml.MappingNode {
		step = 2
	}
	for i := 0; i < len(n.Content); i += step {
		if n.Content[i].Line > 0 {
			out = append(out, n.Content[i])
		}
	}
	return out
}

// apply inserts the edits into src; ok is false when one cannot be made as text (a flow-style or empty
// container, an item whose dash is not on its line).
func (e *textEdits) apply(src []byte) ([]byte, bool) {
	text := string(src)
	eol := "\n"
	if strings.Contains(text, "\r\n") {
		eol = "\r\n"
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type insertion struct {
		line, order int
		text        string
	}
	var ins []insertion
	indentless := indentlessLists(lines)
	for order, ed := range e.list {
		c := ed.container
		if c.Style&yaml.FlowStyle != 0 {
			return nil, false
		}
		orig := original(c)
		if len(orig) == 0 {
			return nil, false
		}
		var at, indent int
		var body *yaml.Node
		switch c.Kind {
		case yaml.SequenceNode:
			dash, ok := dashColumn(lines, orig[0])
			if !ok {
				return nil, false
			}
			indent = dash
			if ed.at == 0 {
				at = orig[0].Line - 1
			} else {
				prev := orig[min(ed.at, len(orig))-1]
				d, ok := dashColumn(lines, prev)
				if !ok {
					return nil, false
				}
				at = extentEnd(lines, prev.Line-1, d, false)
			}
			body = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: ed.nodes}
		case yaml.MappingNode:
			last := orig[len(orig)-1]
			indent = last.Column - 1
			var val *yaml.Node
			for i := 0; i+1 < len(c.Content); i += 2 {
				if c.Content[i] == last {
					val = c.Content[i+1]
				}
			}
			indentless := false
			if val != nil && val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0 {
				if d, ok := dashColumn(lines, val.Content[0]); ok && d == indent {
					indentless = true
				}
			}
			at = extentEnd(lines, last.Line-1, indent, indentless)
			body = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: ed.nodes}
		default:
			return nil, false
		}
		block, ok := encodeBlock(body, indent, eol, indentless)
		if !ok {
			return nil, false
		}
		ins = append(ins, insertion{line: at, order: order, text: block})
	}
	sort.SliceStable(ins, func(i, j int) bool {
		if ins[i].line != ins[j].line {
			return ins[i].line > ins[j].line
		}
		return ins[i].order > ins[j].order
	})
	for _, in := range ins {
		if in.line > len(lines) {
			return nil, false
		}
		if in.line == len(lines) && len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
			lines[len(lines)-1] += eol
		}
		lines = append(lines[:in.line], append([]string{in.text}, lines[in.line:]...)...)
	}
	return []byte(strings.Join(lines, "")), true
}

// dashColumn is the column (0-based) of the dash that starts item, on the item's own line.
func dashColumn(lines []string, item *yaml.Node) (int, bool) {
	if item.Line < 1 || item.Line > len(lines) {
		return 0, false
	}
	l := lines[item.Line-1]
	j := item.Column - 2
	if j >= len(l) {
		return 0, false
	}
	for j >= 0 && l[j] == ' ' {
		j--
	}
	if j < 0 || l[j] != '-' || strings.TrimLeft(l[:j], " ") != "" {
		return 0, false
	}
	return j, true
}

// extentEnd is the line after the last line of the node that starts on line start (0-based) at indentation
// col: the lines below indented deeper (blank lines and, when dash is set, list items at col, belong to it
// too), up to the first other line; trailing blank lines and comments less indented are left after it.
func extentEnd(lines []string, start, col int, dash bool) int {
	last := start
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r\n")
		t := strings.TrimLeft(l, " ")
		if t == "" {
			continue
		}
		ind := len(l) - len(t)
		if ind == 0 && (strings.HasPrefix(t, "---") || strings.HasPrefix(t, "...")) {
			break
		}
		if ind < col || ind == col && !(dash && (t == "-" || strings.HasPrefix(t, "- "))) {
			break
		}
		last = i
	}
	return last + 1
}

// encodeBlock writes n in block style, two spaces a level, every line indented by indent more; with
// indentless, lists under a key start at the key's column, as in "entries:\n- name: a".
func encodeBlock(n *yaml.Node, indent int, eol string, indentless bool) (string, bool) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", false
	}
	if err := enc.Close(); err != nil {
		return "", false
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if indentless {
		for i := 0; i+1 < len(lines); i++ {
			kc, ok := keyOnly(lines[i])
			if !ok || indentOf(lines[i+1]) != kc+2 || !isItem(lines[i+1]) {
				continue
			}
			for j := i + 1; j < len(lines) && indentOf(lines[j]) > kc; j++ {
				lines[j] = lines[j][2:]
			}
		}
	}
	pad := strings.Repeat(" ", indent)
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(pad)
		sb.WriteString(l)
		sb.WriteString(eol)
	}
	return sb.String(), true
}

// indentlessLists says whether the file writes lists under a key at the key's own column more often than
// two columns in.
func indentlessLists(lines []string) bool {
	at, in := 0, 0
	for i := 0; i+1 < len(lines); i++ {
		kc, ok := keyOnly(strings.TrimRight(lines[i], "\r\n"))
		next := strings.TrimRight(lines[i+1], "\r\n")
		if !ok || !isItem(next) {
			continue
		}
		switch indentOf(next) {
		case kc:
			at++
		case kc + 2:
			in++
		}
	}
	return at > in
}

// keyOnly reports the column of the key of a line that is a key alone ("key:", "- key:"), whose value
// follows on the next lines.
func keyOnly(l string) (int, bool) {
	t := strings.TrimLeft(l, " ")
	col := len(l) - len(t)
	for strings.HasPrefix(t, "- ") {
		t = strings.TrimLeft(t[2:], " ")
		col = len(l) - len(t)
	}
	if !strings.HasSuffix(t, ":") || strings.ContainsAny(t, " #'\"") || len(t) < 2 {
		return 0, false
	}
	return col, true
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func isItem(l string) bool {
	t := strings.TrimLeft(l, " ")
	return t == "-" || strings.HasPrefix(t, "- ")
}

// sameYAML says whether two documents hold the same values.
func sameYAML(a, b []byte) bool {
	var va, vb any
	if yaml.Unmarshal(a, &va) != nil || yaml.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
