package gitfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrObjectMissing: the repository does not have an object its trees name. A partial clone
// (--filter=blob:none) leaves out the blobs nobody asked for; nothing here fetches them.
var ErrObjectMissing = errors.New("object not in this repository (a partial clone leaves blobs out; fetch it, or clone without --filter)")

// missing turns go-git's "object not found" into ErrObjectMissing.
func missing(err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return ErrObjectMissing
	}
	return err
}

// objectDir is one object directory: fs rooted so that prefix/pack and prefix/xx/yyyy are its packs and
// loose objects.
type objectDir struct {
	fs     billy.Filesystem
	prefix string
}

const (
	// maxAlternateDepth is how deep alternates of alternates are followed, as git does (5).
	maxAlternateDepth = 5
	// maxAlternates bounds the object directories one repository reads.
	maxAlternates = 64
	// maxAlternatesFile bounds objects/info/alternates.
	maxAlternatesFile = 64 << 10
)

// alternates lists the object directories objectsDir borrows from, through objects/info/alternates, in
// git's order (depth first, each once, never objectsDir itself): each line an absolute path or one relative to
// the object directory whose file names it; blank lines and lines starting with # are skipped. A named
// directory that does not exist is an error: objects would be missing without a word.
func alternates(objectsDir string) ([]string, error) {
	seen := map[string]bool{}
	if abs, err := filepath.Abs(objectsDir); err == nil {
		seen[abs] = true
	}
	var out []string
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		f, err := os.Open(filepath.Join(dir, "info", "alternates"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxAlternatesFile+1))
		if err != nil {
			return err
		}
		if len(data) > maxAlternatesFile {
			return fmt.Errorf("%s is over %d bytes", filepath.Join(dir, "info", "alternates"), maxAlternatesFile)
		}
		alts, err := parseAlternates(data, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, "info", "alternates"), err)
		}
		for _, alt := range alts {
			if seen[alt] {
				continue
			}
			seen[alt] = true
			if st, err := os.Stat(alt); err != nil || !st.IsDir() {
				return fmt.Errorf("%s names the object directory %s, which is not a directory", filepath.Join(dir, "info", "alternates"), alt)
			}
			if len(out) == maxAlternates {
				return fmt.Errorf("more than %d alternate object directories", maxAlternates)
			}
			out = append(out, alt)
			if depth < maxAlternateDepth {
				if err := walk(alt, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(objectsDir, 1); err != nil {
		return nil, fmt.Errorf("reading alternates: %w", err)
	}
	return out, nil
}

// alternateStorage is go-git's storage of the repository, with the objects it does not find read from the
// alternates by this package's readers.
type alternateStorage struct {
	*filesystem.Storage
	r *Repo
}

// maxAlternateObject bounds an object go-git reads through the alternates (commits and trees, in practice;
// blobs are read by Repo itself).
const maxAlternateObject = maxTreeSize

func (s *alternateStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := s.Storage.EncodedObject(t, h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) || len(s.r.objDirs) < 2 {
		return obj, err
	}
	typ, data, rerr := s.r.readNative(h, t)
	if rerr != nil {
		return nil, err
	}
	mo := &plumbing.MemoryObject{}
	mo.SetType(typ)
	if _, err := mo.Write(data); err != nil {
		return nil, err
	}
	return mo, nil
}

func (s *alternateStorage) HasEncodedObject(h plumbing.Hash) error {
	err := s.Storage.HasEncodedObject(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) || len(s.r.objDirs) < 2 {
		return err
	}
	if _, _, rerr := s.r.readNative(h, plumbing.AnyObject); rerr != nil {
		return err
	}
	return nil
}

func (s *alternateStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, err := s.Storage.EncodedObjectSize(h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) || len(s.r.objDirs) < 2 {
		return n, err
	}
	_, data, rerr := s.r.readNative(h, plumbing.AnyObject)
	if rerr != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

// readNative reads an object through this package's pack and loose readers only (every object directory),
// never through go-git. want may be AnyObject.
func (r *Repo) readNative(h Hash, want plumbing.ObjectType) (plumbing.ObjectType, []byte, error) {
	check := func(size int64) error {
		if size > maxAlternateObject {
			return fmt.Errorf("object %s is %d bytes, over %d: %w", h, size, maxAlternateObject, ErrTooLarge)
		}
		return nil
	}
	types := []plumbing.ObjectType{want}
	if want == plumbing.AnyObject {
		typ, _, err := r.packReader().info(h)
		if err == nil {
			types = []plumbing.ObjectType{typ}
		} else {
			types = []plumbing.ObjectType{plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject}
		}
	}
	for _, typ := range types {
		b, err := r.packReader().read(h, typ, check)
		if err == nil {
			return typ, b, nil
		}
		if !errors.Is(err, errFallback) {
			return 0, nil, err
		}
	}
	o, err := openLoose(r.objDirs, h)
	if err != nil {
		return 0, nil, err
	}
	defer o.Close()
	typ, err := plumbing.ParseObjectType(o.typ)
	if err != nil {
		return 0, nil, err
	}
	if want != plumbing.AnyObject && typ != want {
		return 0, nil, plumbing.ErrObjectNotFound
	}
	if err := check(o.size); err != nil {
		return 0, nil, err
	}
	b, err := o.read()
	return typ, b, err
}

// parseAlternates reads an objects/info/alternates file of the object directory dir: one path a line,
// absolute or relative to dir, cleaned; blank lines and lines starting with # are skipped. Quoted paths (git
// writes them only for names with special characters) are refused rather than misread.
func parseAlternates(data []byte, dir string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxAlternatesFile)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `"`) {
			return nil, fmt.Errorf("quoted alternate paths are not supported: %s", line)
		}
		if strings.ContainsRune(line, 0) {
			return nil, errors.New("an alternate path holds a NUL byte")
		}
		alt := line
		if !filepath.IsAbs(alt) {
			alt = filepath.Join(dir, alt)
		}
		out = append(out, filepath.Clean(alt))
	}
	return out, sc.Err()
}
