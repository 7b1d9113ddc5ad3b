package catalogtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Source is one catalog a derived catalog takes packages from: Dir holds
// one directory per package (as the community catalogs do), Tag is appended
// to every package name taken from it ("<pkg>-<tag>") so that catalogs of
// several OpenShift versions can be merged (dots become dashes: package
// names are DNS labels).
type Source struct {
	Dir string
	Tag string
}

// Derive writes a catalog of at least want bytes to dst (which must not
// exist): the packages of sources, each renamed "<pkg>-<tag>" in every place
// a catalog names it (olm.package name, package: of channels, bundles and
// deprecations, packageName of olm.package and olm.package.required
// properties), taken source after source and, when the sources are not
// enough, again with the tag "<tag>-r2", "<tag>-r3"... Whole packages only,
// so the result is a little over want. Files are copied line by line, never
// held whole. It returns the bytes written.
//
// Only YAML catalogs of block style with top-level keys are renamed (what the
// community and certified catalogs are); other files are copied as they are.
func Derive(ctx context.Context, dst string, sources []Source, want int64) (int64, error) {
	if len(sources) == 0 {
		return 0, fmt.Errorf("derive: no source catalog")
	}
	if _, err := os.Stat(dst); err == nil {
		return 0, fmt.Errorf("derive: %s exists; give a new directory", dst)
	}
	pkgs := make([][]string, len(sources))
	declared := make([][]string, len(sources))
	for i, s := range sources {
		names, err := packageNames(s.Dir)
		if err != nil {
			return 0, fmt.Errorf("derive: %w", err)
		}
		declared[i] = names
		entries, err := os.ReadDir(s.Dir)
		if err != nil {
			return 0, fmt.Errorf("derive: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() {
				pkgs[i] = append(pkgs[i], e.Name())
			}
		}
		sort.Strings(pkgs[i])
	}
	var written int64
	for round := 1; written < want; round++ {
		before := written
		for i, s := range sources {
			// Package names are DNS labels: v4.16 becomes v4-16.
			tag := strings.ReplaceAll(s.Tag, ".", "-")
			if round > 1 {
				tag = fmt.Sprintf("%s-r%d", tag, round)
			}
			r := newRenamer(declared[i], tag)
			for _, p := range pkgs[i] {
				if written >= want {
					return written, nil
				}
				if err := ctx.Err(); err != nil {
					return written, err
				}
				n, err := derivePackage(filepath.Join(s.Dir, p), filepath.Join(dst, p+"-"+tag), r)
				written += n
				if err != nil {
					return written, err
				}
			}
		}
		if written == before {
			return written, fmt.Errorf("derive: the sources hold no package files")
		}
	}
	return written, nil
}

// packageLine is a top-level package: line (of a channel, bundle or
// deprecation): every package a catalog uses is named on one.
var packageLine = regexp.MustCompile(`^package: *"?([A-Za-z0-9][A-Za-z0-9._-]*)"?\s*$`)

// packageNames lists the packages the YAML files below dir name (a
// package's directory need not bear its name).
func packageNames(dir string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || !isYAML(p) {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			if m := packageLine.FindSubmatch(sc.Bytes()); m != nil {
				seen[string(m[1])] = true
			}
		}
		return sc.Err()
	})
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, err
}

func isYAML(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// renamer renames the packages of one source catalog in a line of YAML.
type renamer struct {
	names map[string]bool
	tag   string
}

func newRenamer(pkgs []string, tag string) renamer {
	r := renamer{names: map[string]bool{}, tag: tag}
	for _, p := range pkgs {
		r.names[p] = true
	}
	return r
}

// packageRef matches the lines that name a package: a top-level name: or
// package:, and packageName: at any depth (olm.package, olm.package.required).
var packageRef = regexp.MustCompile(`^(name|package|\s*-?\s*packageName): *("?)([A-Za-z0-9][A-Za-z0-9._-]*)("?)\s*$`)

func (r renamer) line(s string) string {
	m := packageRef.FindStringSubmatch(s)
	if m == nil || !r.names[m[3]] || m[2] != m[4] {
		return s
	}
	return m[1] + ": " + m[2] + m[3] + "-" + r.tag + m[4]
}

func derivePackage(src, dst string, r renamer) (int64, error) {
	var written int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		n, err := deriveFile(p, filepath.Join(dst, rel), r, isYAML(p))
		written += n
		return err
	})
	return written, err
}

func deriveFile(src, dst string, r renamer, yaml bool) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	w := &countingWriter{w: bufio.NewWriterSize(out, 256<<10)}
	if yaml {
		err = renameLines(w, in, r)
	} else {
		_, err = io.Copy(w, in)
	}
	if err == nil {
		err = w.w.(*bufio.Writer).Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return w.n, err
}

func renameLines(w io.Writer, in io.Reader, r renamer) error {
	br := bufio.NewReaderSize(in, 256<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			body, nl := strings.CutSuffix(line, "\n")
			out := r.line(body)
			if nl {
				out += "\n"
			}
			if _, werr := io.WriteString(w, out); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
