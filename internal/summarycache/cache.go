// Package summarycache keeps load.SummaryIndex on disk between runs of a
// command, so that a fresh process checking a pull request reads only the
// files of the packages it touches: which package every unchanged file
// holds is known by its git blob id from an earlier run.
//
// The file is written whole to a temporary name and renamed, so concurrent
// runs never see half of one (the last writer wins; a lost entry only costs
// a parse). It carries a stamp naming the program's build and the parse
// limits: an index written by another build is ignored and replaced, never
// trusted.
package summarycache

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/catalog/template"
)

// FileName is the index's name in the cache directory.
const FileName = "file-summaries.jsonl"

// DirsFileName is where the facts of bundle directories (template.DirFacts) are kept, by content key.
const DirsFileName = "bundle-dirs.jsonl"

// maxFileBytes bounds the index read: a million summaries of a few dozen
// bytes each, with room.
const maxFileBytes = 256 << 20

// Store is an index read from, and written back to, one directory.
type Store struct {
	dir   string
	stamp string
	// Index is what the loader consults (catalog.Limits.Index).
	Index *load.SummaryIndex
	// BundleDirs are the facts of bundle directories (checks.PullRequest.BundleDirs): their packages,
	// versions and image digests, so that a directory seen in an earlier run is neither parsed nor built.
	BundleDirs *template.DirFactsCache
	// Renders keeps what bundle directories render to (checks.PullRequest.BundleRenders); nil when its
	// folder cannot be made.
	Renders *Renders
}

// Open reads the index of dir written under stamp. A missing, unreadable,
// foreign (another stamp) or damaged index gives an empty one, which Save
// then replaces; only a directory that cannot be made is an error.
func Open(dir, stamp string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	s := &Store{dir: dir, stamp: stamp, Index: load.NewSummaryIndex(0), BundleDirs: template.NewDirFactsCache(0)}
	if r, err := OpenRenders(dir, stamp, 0); err == nil {
		s.Renders = r
	}
	if f, err := os.Open(filepath.Join(dir, DirsFileName)); err == nil {
		if c, err := template.ReadDirFactsCache(&capped{r: f, left: maxFileBytes}, stamp, 0); err == nil {
			s.BundleDirs = c
		}
		f.Close()
	}
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		return s, nil
	}
	defer f.Close()
	if x, err := load.ReadSummaryIndex(&capped{r: f, left: maxFileBytes}, stamp, 0); err == nil {
		s.Index = x
	}
	return s, nil
}

// Save writes the index and the bundle directory facts back when this run added to them.
func (s *Store) Save() error {
	if s == nil {
		return nil
	}
	if s.Index.Added() > 0 {
		if err := s.write(FileName, "the file summary index", func(w io.Writer) error { return s.Index.WriteTo(w, s.stamp) }); err != nil {
			return err
		}
	}
	if s.BundleDirs != nil && s.BundleDirs.Added() > 0 {
		return s.write(DirsFileName, "the bundle directory facts", func(w io.Writer) error { return s.BundleDirs.WriteTo(w, s.stamp) })
	}
	return nil
}

// write writes one file of the cache whole: to a temporary name, then renamed.
func (s *Store) write(name, what string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(s.dir, name+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// Stamp names this program's build and the parse limits: the build from
// its module and VCS information and the executable's size and time (a
// rebuilt binary, even of a modified tree, has another), so an index never
// outlives the parser that made it.
func Stamp(lim catalog.Limits) string {
	build := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		build = bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				build += " " + s.Key + "=" + s.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			build += fmt.Sprintf(" exe=%d@%d", st.Size(), st.ModTime().UnixNano())
		}
	}
	return build + " " + lim.ParseStamp()
}

// DirFrom picks the cache directory from the environment (getenv):
// CATALOGBOT_CACHE_DIR, else catalogbot under XDG_CACHE_HOME, else
// ~/.cache/catalogbot; "" when none is set.
func DirFrom(getenv func(string) string) string {
	if d := getenv("CATALOGBOT_CACHE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "catalogbot")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "catalogbot")
	}
	return ""
}

// capped refuses to read past its bound: an index larger than any real one
// is damaged, not trusted in part.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("file summary index is over %d bytes", int64(maxFileBytes))
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
