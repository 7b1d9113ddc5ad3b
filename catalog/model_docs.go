package catalog

// Docs returns the documents the catalog was built from, in load order. The
// slice is shared: callers must not modify it.
func (c *Catalog) Docs() []Doc { return c.docs }
