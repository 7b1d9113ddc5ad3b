// Package bundle reads registry+v1 bundle directories (manifests/ and metadata/annotations.yaml, as
// operator-sdk writes them and the community catalog repositories keep them) from any fs.FS, and judges them
// by the rules opm applies when it loads a bundle, with file:line on every finding.
package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/catalogbot/catalogbot/catalog"
)

// Annotation keys of metadata/annotations.yaml (seed 001), and the values registry+v1 requires.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"

	MediaTypeRegistryV1 = "registry+v1"
	ManifestsDir        = "manifests/"
	MetadataDir         = "metadata/"
)

// Bundle is one bundle directory as read.
type Bundle struct {
	// Annotations of metadata/annotations.yaml, and where each value is.
	Annotations   map[string]string
	AnnotationPos map[string]catalog.Position
	AnnotationsAt catalog.Position // the annotations file

	Package        string
	Channels       []string
	DefaultChannel string

	// CSV is the ClusterServiceVersion manifest; CRDs the CustomResourceDefinitions; Others every other
	// manifest, in file order.
	CSV    *Manifest
	CRDs   []*Manifest
	Others []*Manifest

	// Dependencies are the entries of metadata/dependencies.yaml (type and value), Properties those of
	// metadata/properties.yaml.
	Dependencies []Entry
	Properties   []Entry
}

// Manifest is one Kubernetes object of manifests/.
type Manifest struct {
	File       string // relative to the bundle directory
	Pos        catalog.Position
	APIVersion string
	Kind       string
	Name       string
	Value      catalog.Value

	size int // bytes of its file
}

// Entry is one {type, value} item of dependencies.yaml or properties.yaml.
type Entry struct {
	Type  string
	Value *catalog.Value
	Pos   catalog.Position
}

// Limits bound what is read of a bundle directory.
type Limits struct {
	MaxFiles      int   // files in manifests/ (default 1000)
	MaxTotalBytes int64 // bytes of all files (default 64 MiB)
	// Parse bounds each file (see catalog.Limits).
	Parse catalog.Limits
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 1000
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = 64 << 20
	}
	return l
}

// ErrNotABundle: the directory has neither manifests/ nor metadata/.
var ErrNotABundle = errors.New("not a bundle directory: it has neither manifests/ nor metadata/")

// Load reads the bundle directory at the root of fsys. Problems of the bundle are findings (with positions
// relative to the bundle directory); the error is for I/O failure, a bound, or ErrNotABundle.
func Load(ctx context.Context, fsys fs.FS, lim Limits) (*Bundle, []catalog.Finding, error) {
	lim = lim.withDefaults()
	r := &reader{ctx: ctx, fsys: fsys, lim: lim, b: &Bundle{Annotations: map[string]string{}, AnnotationPos: map[string]catalog.Position{}}}
	manifests, errM := isDir(fsys, "manifests")
	metadata, errD := isDir(fsys, "metadata")
	if errM != nil || errD != nil {
		return nil, nil, errors.Join(errM, errD)
	}
	if !manifests && !metadata {
		return nil, nil, ErrNotABundle
	}
	if !manifests {
		r.add(ruleNoManifests, catalog.Position{File: "manifests"}, "the bundle has no manifests/ directory")
	}
	if !metadata {
		r.add(ruleNoMetadata, catalog.Position{File: "metadata"}, "the bundle has no metadata/ directory")
	}
	if metadata {
		if err := r.readMetadata(); err != nil {
			return nil, nil, err
		}
	}
	if manifests {
		if err := r.readManifests(); err != nil {
			return nil, nil, err
		}
	}
	catalog.SortFindings(r.findings)
	return r.b, r.findings, nil
}

type reader struct {
	ctx      context.Context
	fsys     fs.FS
	lim      Limits
	b        *Bundle
	findings []catalog.Finding
	total    int64
}

func (r *reader) add(rule string, pos catalog.Position, format string, args ...any) {
	rl := ruleByID(rule)
	r.findings = append(r.findings, catalog.Finding{Rule: rule, Severity: rl.Severity, Position: pos,
		Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: r.b.Package})
}

func isDir(fsys fs.FS, name string) (bool, error) {
	info, err := fs.Stat(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", name, err)
	}
	return info.IsDir(), nil
}

// read reads one regular file under the bundle's bounds; a link or special file is a finding, not followed.
func (r *reader) read(name string) ([]byte, bool, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, false, err
	}
	info, err := fs.Stat(r.fsys, name)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		r.add(ruleNotRegular, catalog.Position{File: name}, "%s is not a regular file (a link or a special file); it was not read", name)
		return nil, false, nil
	}
	r.total += info.Size()
	if r.total > r.lim.MaxTotalBytes {
		return nil, false, fmt.Errorf("the bundle directory holds more than %d bytes", r.lim.MaxTotalBytes)
	}
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	// One buffer of the size Stat gave (and a byte more, so a file that grew meanwhile is seen to).
	data := make([]byte, info.Size()+1)
	n, err := io.ReadFull(f, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false, fmt.Errorf("reading %s: %w", name, err)
	}
	return data[:n:n], true, nil
}

// parse reads a file as YAML or JSON documents; its syntax findings are kept.
func (r *reader) parse(name string) ([]catalog.Doc, bool, error) {
	data, ok, err := r.read(name)
	if err != nil || !ok {
		return nil, false, err
	}
	docs, fs := catalog.ParseDocuments(name, data, r.lim.Parse)
	r.findings = append(r.findings, fs...)
	return docs, true, nil
}

// readMetadata reads annotations.yaml (required), dependencies.yaml and properties.yaml (optional).
func (r *reader) readMetadata() error {
	names, err := fs.ReadDir(r.fsys, "metadata")
	if err != nil {
		return fmt.Errorf("reading metadata: %w", err)
	}
	found := false
	for _, e := range names {
		if e.IsDir() {
			continue
		}
		name := path.Join("metadata", e.Name())
		switch e.Name() {
		case "annotations.yaml", "annotations.yml":
			found = true
			if err := r.readAnnotations(name); err != nil {
				return err
			}
		case "dependencies.yaml", "dependencies.yml":
			entries, err := r.readEntries(name, "dependencies")
			if err != nil {
				return err
			}
			r.b.Dependencies = entries
			for _, d := range entries {
				switch d.Type {
				case "olm.package", "olm.gvk", "olm.constraint", "olm.label":
				default:
					r.add(ruleDependencyType, d.Pos, "dependency type %q is not one OLM knows (olm.package, olm.gvk, olm.constraint, olm.label)", d.Type)
				}
			}
		case "properties.yaml", "properties.yml":
			entries, err := r.readEntries(name, "properties")
			if err != nil {
				return err
			}
			r.b.Properties = entries
		}
	}
	if !found {
		r.add(ruleNoAnnotations, catalog.Position{File: "metadata/annotations.yaml"}, "metadata/ holds no annotations.yaml")
	}
	return nil
}

func (r *reader) readAnnotations(name string) error {
	docs, ok, err := r.parse(name)
	if err != nil || !ok {
		return err
	}
	r.b.AnnotationsAt = catalog.Position{File: name, Line: 1}
	if len(docs) == 0 {
		r.add(ruleNoAnnotations, r.b.AnnotationsAt, "%s holds no annotations", name)
		return nil
	}
	ann := docs[0].Value.Get("annotations")
	if ann == nil || ann.Kind != catalog.KindObject {
		r.add(ruleNoAnnotations, docs[0].Pos, "%s has no 'annotations:' mapping", name)
		return nil
	}
	for _, f := range ann.Fields() {
		v := f.Value
		if v.Kind != catalog.KindString {
			r.add(ruleAnnotationNotString, v.Pos(name), "annotation %q is %s, not a string: quote it", f.Key, v.Kind)
			continue
		}
		r.b.Annotations[f.Key] = v.Str()
		r.b.AnnotationPos[f.Key] = v.Pos(name)
	}
	at := func(key string) catalog.Position {
		if p, ok := r.b.AnnotationPos[key]; ok {
			return p
		}
		return docs[0].Pos
	}
	for _, key := range []string{AnnotationMediaType, AnnotationManifests, AnnotationMetadata, AnnotationPackage, AnnotationChannels} {
		if _, ok := r.b.Annotations[key]; !ok {
			r.add(ruleAnnotationMissing, docs[0].Pos, "annotation %q is missing", key)
		}
	}
	if v, ok := r.b.Annotations[AnnotationMediaType]; ok && v != MediaTypeRegistryV1 {
		r.add(ruleMediaType, at(AnnotationMediaType), "mediatype is %q; a registry+v1 bundle says %q", v, MediaTypeRegistryV1)
	}
	if v, ok := r.b.Annotations[AnnotationManifests]; ok && v != ManifestsDir {
		r.add(ruleAnnotationPath, at(AnnotationManifests), "%s is %q; the manifests are read from %q", AnnotationManifests, v, ManifestsDir)
	}
	if v, ok := r.b.Annotations[AnnotationMetadata]; ok && v != MetadataDir {
		r.add(ruleAnnotationPath, at(AnnotationMetadata), "%s is %q; the metadata is read from %q", AnnotationMetadata, v, MetadataDir)
	}
	r.b.Package = r.b.Annotations[AnnotationPackage]
	if _, ok := r.b.Annotations[AnnotationPackage]; ok && strings.TrimSpace(r.b.Package) == "" {
		r.add(ruleAnnotationEmpty, at(AnnotationPackage), "the package annotation is empty")
	}
	if v, ok := r.b.Annotations[AnnotationChannels]; ok {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" {
				r.b.Channels = append(r.b.Channels, c)
			}
		}
		if len(r.b.Channels) == 0 {
			r.add(ruleAnnotationEmpty, at(AnnotationChannels), "the channels annotation names no channel; a bundle is in at least one")
		}
	}
	if v, ok := r.b.Annotations[AnnotationDefaultChannel]; ok {
		r.b.DefaultChannel = strings.TrimSpace(v)
		if r.b.DefaultChannel == "" {
			r.add(ruleAnnotationEmpty, at(AnnotationDefaultChannel), "the default channel annotation is empty; remove it or name a channel")
		}
	}
	return nil
}

func (r *reader) readEntries(name, key string) ([]Entry, error) {
	docs, ok, err := r.parse(name)
	if err != nil || !ok || len(docs) == 0 {
		return nil, err
	}
	list := docs[0].Value.Get(key)
	if list == nil || list.Kind != catalog.KindArray {
		r.add(ruleMetadataShape, docs[0].Pos, "%s has no %q list", name, key)
		return nil, nil
	}
	var out []Entry
	for _, it := range list.Items() {
		t := it.Get("type")
		if it.Kind != catalog.KindObject || t == nil || t.Kind != catalog.KindString || t.Str() == "" {
			r.add(ruleMetadataShape, it.Pos(name), "each %s entry needs a string type and a value", key)
			continue
		}
		out = append(out, Entry{Type: t.Str(), Value: it.Get("value"), Pos: it.Pos(name)})
	}
	return out, nil
}

// readManifests reads every file of manifests/ (one object each, as opm reads them).
func (r *reader) readManifests() error {
	entries, err := fs.ReadDir(r.fsys, "manifests")
	if err != nil {
		return fmt.Errorf("reading manifests: %w", err)
	}
	if len(entries) > r.lim.MaxFiles {
		return fmt.Errorf("manifests/ holds %d entries, more than %d", len(entries), r.lim.MaxFiles)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	// Read every file first, in order (bounds and findings as one by one), then parse them side by side.
	files := make([]manifestFile, 0, len(entries))
	for _, e := range entries {
		name := path.Join("manifests", e.Name())
		if e.IsDir() {
			r.add(ruleManifestsSubdir, catalog.Position{File: name}, "manifests/ holds a directory %s; opm reads only the files of manifests/ itself", e.Name())
			continue
		}
		data, ok, err := r.read(name)
		if err != nil {
			return err
		}
		files = append(files, manifestFile{name: name, data: data, ok: ok})
	}
	r.parseAll(files)
	var csvs []*Manifest
	for _, f := range files {
		name, docs, ok := f.name, f.docs, f.ok
		r.findings = append(r.findings, f.findings...)
		if !ok || len(docs) == 0 {
			if ok {
				r.add(ruleManifestEmpty, catalog.Position{File: name, Line: 1}, "%s holds no object", name)
			}
			continue
		}
		if len(docs) > 1 {
			r.add(ruleManifestMulti, docs[1].Pos, "%s holds %d objects; opm reads only the first of each manifest file", name, len(docs))
		}
		m := &Manifest{File: name, Pos: docs[0].Pos, Value: docs[0].Value, size: len(f.data)}
		m.APIVersion = str(m.Value.Get("apiVersion"))
		m.Kind = str(m.Value.Get("kind"))
		if md := m.Value.Get("metadata"); md != nil {
			m.Name = str(md.Get("name"))
		}
		switch {
		case m.Kind == "":
			// opm's decoder needs a kind; an object without apiVersion passes it (the community catalog
			// holds such ClusterRoles).
			r.add(ruleManifestNoKind, m.Pos, "%s has no kind; it is not a Kubernetes object", name)
			continue
		case !supportedKind(m.Kind):
			r.add(ruleUnsupportedKind, m.Pos, "kind %s is not one a registry+v1 bundle may ship", m.Kind)
			continue
		}
		if m.Name == "" {
			r.add(ruleManifestNoName, m.Pos, "%s %s has no metadata.name", m.Kind, name)
		}
		switch m.Kind {
		case "ClusterServiceVersion":
			csvs = append(csvs, m)
		case "CustomResourceDefinition":
			if m.APIVersion != "apiextensions.k8s.io/v1" && m.APIVersion != "apiextensions.k8s.io/v1beta1" {
				r.add(ruleCRDVersion, m.Pos, "CRD apiVersion %q is not apiextensions.k8s.io/v1 or v1beta1", m.APIVersion)
			}
			r.b.CRDs = append(r.b.CRDs, m)
		default:
			r.b.Others = append(r.b.Others, m)
		}
	}
	switch len(csvs) {
	case 0:
		r.add(ruleCSVCount, catalog.Position{File: "manifests"}, "manifests/ holds no ClusterServiceVersion; a bundle has exactly one")
	case 1:
		r.b.CSV = csvs[0]
		r.checkOwnedCRDs()
		r.checkCSV()
		r.checkBundleObjects()
	default:
		for _, c := range csvs[1:] {
			r.add(ruleCSVCount, c.Pos, "a second ClusterServiceVersion (%s); a bundle has exactly one, the first is %s", c.Name, csvs[0].File)
		}
		r.b.CSV = csvs[0]
		r.checkCSV()
	}
	return nil
}

// manifestFile is one file of manifests/: its bytes as read, then its documents and syntax findings.
type manifestFile struct {
	name     string
	data     []byte
	ok       bool // read (a regular file)
	docs     []catalog.Doc
	findings []catalog.Finding
}

// parallelBytes: below this many bytes in all, the files of a bundle are parsed one after the other: starting
// goroutines would cost more than it saves.
const parallelBytes = 64 << 10

// parseAll parses the files that were read. Parsing keeps no state between files, so the outcome is the same
// as one after the other.
func (r *reader) parseAll(files []manifestFile) {
	total := 0
	for i := range files {
		total += len(files[i].data)
	}
	eachInParallel(len(files), total, func(i int) int { return len(files[i].data) }, func(_, i int) {
		if f := &files[i]; f.ok {
			f.docs, f.findings = catalog.ParseDocuments(f.name, f.data, r.lim.Parse)
		}
	})
}

// eachInParallel calls do(worker, i) for every i below n, largest size(i) first, on as many goroutines as the
// process may run at once (worker numbers them from 0), or on this one when total is small.
func eachInParallel(n, total int, size func(int) int, do func(worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 || total < parallelBytes {
		for i := range n {
			do(0, i)
		}
		return
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return size(order[a]) > size(order[b]) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				do(w, order[i])
			}
		})
	}
	wg.Wait()
}

// checkOwnedCRDs: every CRD the CSV owns ships in the bundle (with the version it names).
func (r *reader) checkOwnedCRDs() {
	shipped := map[string]map[string]bool{}
	for _, c := range r.b.CRDs {
		versions := map[string]bool{}
		spec := c.Value.Get("spec")
		if spec != nil {
			if vs := spec.Get("versions"); vs != nil {
				for _, v := range vs.Items() {
					versions[str(v.Get("name"))] = true
				}
			}
			if v := spec.Get("version"); v != nil { // v1beta1
				versions[str(v)] = true
			}
		}
		shipped[c.Name] = versions
	}
	csv := r.b.CSV
	owned := path2(csv.Value, "spec", "customresourcedefinitions", "owned")
	if owned == nil {
		return
	}
	for _, o := range owned.Items() {
		name, version := str(o.Get("name")), str(o.Get("version"))
		versions, ok := shipped[name]
		switch {
		case name == "":
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "an owned CRD of the CSV has no name")
		case !ok:
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "the CSV owns CRD %s, which the bundle does not ship", name)
		case version != "" && !versions[version]:
			r.add(ruleOwnedCRDMissing, o.Pos(csv.File), "the CSV owns CRD %s at version %s, which the shipped CRD does not serve", name, version)
		}
	}
}

func str(v *catalog.Value) string {
	if v == nil || v.Kind != catalog.KindString {
		return ""
	}
	return v.Str()
}

func path2(v catalog.Value, keys ...string) *catalog.Value {
	cur := &v
	for _, k := range keys {
		if cur == nil || cur.Kind != catalog.KindObject {
			return nil
		}
		cur = cur.Get(k)
	}
	return cur
}

// supportedKind: the kinds a registry+v1 bundle may ship (operator-registry's list of supported resources).
func supportedKind(kind string) bool {
	switch kind {
	case "ClusterServiceVersion", "CustomResourceDefinition", "Secret", "ClusterRole", "ClusterRoleBinding",
		"ConfigMap", "ServiceAccount", "Service", "Role", "RoleBinding", "PrometheusRule", "ServiceMonitor",
		"PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart",
		"ConsoleCLIDownload", "ConsoleLink", "ConsolePlugin", "NetworkPolicy", "PodMonitor":
		return true
	}
	return false
}
