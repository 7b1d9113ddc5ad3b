package jobs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCommands(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
	}{
		{"/approve", []string{"approve"}},
		{"LGTM\r\n/Approve  \r\nthanks", []string{"approve"}},
		{"    /approve\n  /hold", nil},
		{"/hold\n/hold cancel\n/hold", []string{"hold"}},
		{"/hold   CANCEL", []string{"hold cancel"}},
		{"/retest\n/help", []string{"retest", "help"}},
		{"/lgtm\n/assign @carol\n/approve no-issue\n/approvecancel", []string{"lgtm"}},
		{"please /approve this", nil},
		{"> /approve\n```\n/hold\n```\n~~~\n/retest\n~~~", nil},
		{"```\n/hold\n```\n/retest", []string{"retest"}},
		{"/approve cancel", []string{"approve cancel"}},
		{"", nil},
	} {
		if got := ParseCommands(c.body); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCommands(%q) = %q, want %q", c.body, got, c.want)
		}
	}
	many := strings.Repeat("/hold\n/hold cancel\n/approve\n/approve cancel\n/retest\n/help\n", 5)
	if got := ParseCommands(many); !reflect.DeepEqual(got, []string{"retest", "help", "hold cancel", "approve cancel"}) {
		t.Errorf("repeated commands = %q, want each family once, its last word", got)
	}
	long := strings.Repeat("x", maxCommandBody) + "\n/approve"
	if got := ParseCommands(long); len(got) != 0 {
		t.Errorf("a command past the bound was read: %q", got)
	}
}
