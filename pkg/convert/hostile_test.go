package convert

import (
	"context"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"strconv"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/userinput"
	capenv "github.com/capctl/capctl/pkg/env"
)

// TestEndlessInputIsRefused: standard input that never ends and /dev/zero (which reports size 0)
// stop at the input bound, with an error naming it and the flag that raises it.
func TestEndlessInputIsRefused(t *testing.T) {
	old := userinput.SetMax(1 << 20)
	defer userinput.SetMax(old)
	for name, req := range map[string]Request{
		"stdin":     {Paths: []string{"-"}, Stdin: userinputtest.Endless{}},
		"/dev/zero": {Paths: []string{"/dev/zero"}},
	} {
		_, err := Run(context.Background(), capenv.Env{}, req)
		if !userinput.IsTooLarge(err) || !strings.Contains(err.Error(), "--max-input-size") {
			t.Errorf("%s: %v, want the input bound", name, err)
		}
	}
}

// TestDuplicateKeyIsAnError: a key given twice is reported with its line, not resolved.
func TestDuplicateKeyIsAnError(t *testing.T) {
	in := mhcV1beta1 + "---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineHealthCheck\nmetadata:\n  name: b\n  name: c\nspec:\n  clusterName: x\n"
	rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{"-"}, Stdin: strings.NewReader(in)})
	if err == nil {
		t.Fatalf("a duplicate key converted:\n%s", rep.Files[0].Output)
	}
	line := strings.Count(mhcV1beta1, "\n") + 6 // the second name: line 5 of the second document
	want := "key \"name\" is given twice"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "line "+strconv.Itoa(line)+":") {
		t.Fatalf("duplicate key: %v, want %q at line %d", err, want, line)
	}
}
