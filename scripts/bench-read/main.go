// Command bench-read is the floor that whole-catalog validation is measured
// against (issue 18.4, docs/benchmarks.md "Memory on bundle-dense
// catalogs"): a plain Go program that walks a catalog directory and reads
// every regular file, on -j workers.
//
//	bench-read [-decode] [-j N] DIR
//
// With -decode it also decodes every document into generic values, as a
// program with no parser of its own would: a file whose first non-space
// byte is '{' as a stream of JSON values (encoding/json), any other file cut
// on "---" lines and each piece unmarshalled by sigs.k8s.io/yaml. Nothing is
// kept. It prints the files, bytes and documents it saw.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/yaml"
)

func main() {
	decode := flag.Bool("decode", false, "decode every document into generic values")
	jobs := flag.Int("j", runtime.GOMAXPROCS(0), "files read at once")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bench-read [-decode] [-j N] DIR")
		os.Exit(2)
	}
	root := flag.Arg(0)
	var paths []string
	// Walked as catalog-check walks it: DIR itself may be a link.
	err := fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			paths = append(paths, filepath.Join(root, p))
		}
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-read: %s: %v\n", root, err)
		os.Exit(2)
	}
	var nbytes, ndocs atomic.Int64
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range max(*jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				data, err := os.ReadFile(paths[i])
				if err != nil {
					log.Fatal(err)
				}
				nbytes.Add(int64(len(data)))
				if *decode {
					ndocs.Add(int64(decodeAll(data)))
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d files, %d bytes, %d documents\n", len(paths), nbytes.Load(), ndocs.Load())
}

// decodeAll decodes the documents of one file into generic values and
// counts those that decode; the others are skipped, as their bytes were read.
func decodeAll(data []byte) int {
	n := 0
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) || err != nil && !errors.As(err, new(*json.UnmarshalTypeError)) {
				return n
			}
			n++
		}
	}
	for _, doc := range splitYAML(data) {
		var v any
		if yaml.Unmarshal(doc, &v) == nil && v != nil {
			n++
		}
	}
	return n
}

// splitYAML cuts a YAML stream on lines starting with "---".
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	start := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if bytes.HasPrefix(data[off:], []byte("---")) {
			if off > start {
				docs = append(docs, data[start:off])
			}
			start = next
		}
		off = next
	}
	if start < len(data) {
		docs = append(docs, data[start:])
	}
	return docs
}
