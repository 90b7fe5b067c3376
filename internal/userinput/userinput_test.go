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
