package gitfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"

	"github.com/go-git/go-billy/v5"

	// As for packs: klauspost's zlib inflates git objects faster than compress/zlib.
	"github.com/klauspost/compress/zlib"
)

// errNotLoose: the object is not stored as a loose object (it may be packed).
var errNotLoose = errors.New("not a loose object")

// maxHeader bounds a loose object's header ("blob 123456789\x00").
const maxHeader = 32

// looseObject opens a loose object and reads its header, without inflating
// the content. go-git inflates (and hashes) loose objects whole on lookup;
// reading them here lets the size limit apply before any content is read and
// saves a copy. Packed objects are read by pack.go.
type looseObject struct {
	f    billy.File
	z    io.ReadCloser
	r    *bufio.Reader
	typ  string
	size int64
}

// openLoose opens the loose object h in the first of dirs that has it.
func openLoose(dirs []objectDir, h Hash) (*looseObject, error) {
	hex := h.String()
	var f billy.File
	for _, d := range dirs {
		var err error
		f, err = d.fs.Open(path.Join(d.prefix, hex[:2], hex[2:]))
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if f == nil {
		return nil, errNotLoose
	}
	z, err := zlib.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	o := &looseObject{f: f, z: z, r: bufio.NewReaderSize(z, 512)}
	if err := o.header(); err != nil {
		o.Close()
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	return o, nil
}

func (o *looseObject) header() error {
	head, err := o.r.Peek(maxHeader)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return err
	}
	end := bytes.IndexByte(head, 0)
	if end < 0 {
		return errors.New("malformed header")
	}
	typ, size, ok := bytes.Cut(head[:end], []byte(" "))
	if !ok {
		return errors.New("malformed header")
	}
	n, err := strconv.ParseInt(string(size), 10, 64)
	if err != nil || n < 0 {
		return errors.New("malformed size in header")
	}
	o.typ, o.size = string(typ), n
	_, err = o.r.Discard(end + 1)
	return err
}

// read reads the whole content, which must be exactly the header's size.
// Reading on to the end of the stream makes zlib verify its checksum, and
// refuses an object holding more than its header declares.
func (o *looseObject) read() ([]byte, error) {
	buf := make([]byte, o.size)
	if _, err := io.ReadFull(o.r, buf); err != nil {
		return nil, fmt.Errorf("truncated object: %w", err)
	}
	var one [1]byte
	switch n, err := io.ReadFull(o.r, one[:]); {
	case n > 0:
		return nil, fmt.Errorf("object is longer than the %d bytes its header declares", o.size)
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("damaged object: %w", err)
	}
	return buf, nil
}

func (o *looseObject) Close() error {
	o.z.Close()
	return o.f.Close()
}
