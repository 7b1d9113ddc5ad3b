package catalog

// yamlFast parses the block-style subset of YAML that real catalogs use.
// ok is false when the chunk holds anything it does not fully handle; the
// caller then uses yamlFull, which must give the same Value.
func (p *fileParser) yamlFast(c yamlChunk) (Value, bool) {
	return Value{}, false
}
