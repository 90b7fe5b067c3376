package templates

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/env"
)

// TestGenerateYAMLBoundsItsInput: --from - with an endless pipe, --from /dev/zero (size 0
// reported) and --values /dev/zero stop at the input bound, naming the flag that raises it.
func TestGenerateYAMLBoundsItsInput(t *testing.T) {
	old := userinput.SetMax(1 << 20)
	defer userinput.SetMax(old)
	ctx := context.Background()
	tmpl := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]YAMLRequest{
		"--from -":           {From: "-", Stdin: userinputtest.Endless{}},
		"--from /dev/zero":   {From: "/dev/zero"},
		"--values /dev/zero": {From: tmpl, Values: Values{File: "/dev/zero"}},
	} {
		_, err := GenerateYAML(ctx, env.Env{}, req)
		if !userinput.IsTooLarge(err) || !strings.Contains(err.Error(), "--max-input-size") {
			t.Errorf("%s: %v, want the input bound", name, err)
		}
	}
}

// TestDuplicateKeysAreErrors: generate yaml and --values refuse a key given twice, naming the line.
func TestDuplicateKeysAreErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  name: z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := GenerateYAML(ctx, env.Env{}, YAMLRequest{From: tmpl})
	if err == nil || !strings.Contains(err.Error(), `key "name" is given twice`) || !strings.Contains(err.Error(), "line 10") {
		t.Errorf("template with a duplicate key: %v, want line 10 named", err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${NAME}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vals := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(vals, []byte("NAME: a\nOTHER: b\nNAME: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = GenerateYAML(ctx, env.Env{}, YAMLRequest{From: good, Values: Values{File: vals}})
	if err == nil || !strings.Contains(err.Error(), `line 3: key "NAME" is given twice`) {
		t.Errorf("--values with a duplicate key: %v", err)
	}
}
