package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunValidate(t *testing.T) {
	sample := filepath.Join("..", "..", "testdata", "catalogs", "sample")
	stranded := filepath.Join("..", "..", "catalog", "testdata", "validate", "channel.stranded", "catalog")
	warnOnly := filepath.Join("..", "..", "catalog", "testdata", "validate", "bundle.csv-mismatch", "catalog")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		notOut   []string
	}{
		{"sample is valid", []string{sample}, exitPass,
			[]string{sample + ": valid: 2 packages, 8 bundles; 0 errors, 0 warnings"}, nil},
		{"invalid catalog", []string{stranded}, exitFail,
			[]string{filepath.Join(stranded, "foo", "catalog.yaml") + ":9:11: error: channel.stranded: entry \"foo.v1.0.0\"", "    hint: ", "INVALID"}, nil},
		{"no hints", []string{"--no-hints", stranded}, exitFail,
			[]string{"channel.stranded"}, []string{"hint:"}},
		{"quiet", []string{"-q", stranded}, exitFail,
			[]string{"INVALID: 1 package, 3 bundles; 1 error, 0 warnings"}, []string{"channel.stranded:", "hint:"}},
		{"warnings pass", []string{warnOnly}, exitPass,
			[]string{": warning: bundle.csv-mismatch: the embedded"}, nil},
		{"each dir on its own", []string{sample, stranded}, exitFail,
			[]string{sample + ": valid", stranded + ": INVALID"}, nil},
		{"missing dir", []string{filepath.Join(t.TempDir(), "nope")}, exitCannotRun, nil, nil},
		{"no args", nil, exitCannotRun, nil, nil},
		{"bad output", []string{"--output", "xml", sample}, exitCannotRun, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"validate"}, tt.args...), &out, &errb)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out.String(), errb.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q; got:\n%s", s, out.String())
				}
			}
			for _, s := range tt.notOut {
				if strings.Contains(out.String(), s) {
					t.Errorf("stdout has %q; got:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestRunValidateJSON(t *testing.T) {
	stranded := filepath.Join("..", "..", "catalog", "testdata", "validate", "channel.stranded", "catalog")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"validate", "--output", "json", stranded}, &out, &errb)
	if code != exitFail {
		t.Fatalf("exit code = %d, want %d (stderr %s)", code, exitFail, errb.String())
	}
	var rep validateReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if rep.Valid {
		t.Errorf("valid = true, want false")
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "channel.stranded" || rep.Findings[0].Line != 9 {
		t.Errorf("findings = %+v, want one channel.stranded at line 9", rep.Findings)
	}
	if want := filepath.Join(stranded, "foo", "catalog.yaml"); rep.Findings[0].File != want {
		t.Errorf("file = %q, want %q", rep.Findings[0].File, want)
	}
}
