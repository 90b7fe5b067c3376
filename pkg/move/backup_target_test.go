package move

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupTargetRefusals: every folder a backup must not be written to is refused before the
// backup pauses anything (checkBackupTarget runs first and takes no client), naming the folder
// and why; a missing, an empty and an earlier backup's folder of the same scope are accepted.
func TestBackupTargetRefusals(t *testing.T) {
	ctx := context.Background()
	scope := Scope{Namespace: "team-a"}
	base := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	real := mk("real")
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	notEmpty := mk("not-empty")
	if err := os.WriteFile(filepath.Join(notEmpty, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	previous := writeCrafted(t, legit) // a backup of team-a (cluster ID "")

	for _, tc := range []struct {
		name, dir, id string
		want          string // "" = accepted
	}{
		{"symbolic link", link, "", "is a symbolic link (to " + real + "): name the real folder"},
		{"a file", file("a-file"), "", "exists and is not a directory"},
		{"parent missing", filepath.Join(base, "no-such-parent", "backup"), "", "the backup directory's parent: "},
		{"parent a file", filepath.Join(file("parent-file"), "backup"), "", "not a directory"},
		{"not empty, not a backup", notEmpty, "", "is not empty (1 entries) and does not hold a capctl backup: choose an empty or new directory"},
		{"a backup of another scope", previous, "", "holds a backup of namespace team-a"},
		{"a backup from another cluster", previous, "other-cluster", "not of namespace team-a from this cluster"},
		{"missing", filepath.Join(base, "new"), "", ""},
		{"empty", mk("empty"), "", ""},
		{"an earlier backup of the same scope and cluster", previous, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scope
			if tc.name == "a backup of another scope" {
				sc = Scope{Namespace: "team-b"}
			}
			got, err := checkBackupTarget(ctx, tc.dir, sc, tc.id)
			if tc.want == "" {
				if err != nil || got == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.dir)) {
				t.Fatalf("got %v, want a refusal naming %s and saying %q", err, tc.dir, tc.want)
			}
		})
	}
	if os.Geteuid() != 0 { // root writes into any folder: the probe cannot be refused then
		ro := mk("read-only")
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(ro, 0o755)
		if _, err := checkBackupTarget(ctx, filepath.Join(ro, "backup"), scope, ""); err == nil || !strings.Contains(err.Error(), "does not accept a new folder") {
			t.Errorf("a read-only parent: %v", err)
		}
	}
}
