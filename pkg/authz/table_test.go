package authz

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/guides/permissions.md")

// TestPermissionsDocIsUpToDate: the permissions guide is the table, rendered.
func TestPermissionsDocIsUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "guides", "permissions.md")
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date: run go test ./pkg/authz -run TestPermissionsDocIsUpToDate -update", path)
	}
}

func TestSnippetGroupsRules(t *testing.T) {
	got := Snippet("r", []Permission{
		{Group: "rbac.authorization.k8s.io", Resource: "roles", Verb: "list"},
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "list"},
		{Group: "", Resource: "secrets", Verb: "delete", Namespace: "ns1"},
		{Group: "", Resource: "secrets", Verb: "delete", Namespace: "ns1"},
	})
	for _, want := range []string{"kind: ClusterRole", "  - rolebindings\n  - roles\n  verbs:\n  - list", "kind: Role", "namespace: ns1", "  - secrets\n  verbs:\n  - delete"} {
		if !strings.Contains(got, want) {
			t.Errorf("snippet lacks %q:\n%s", want, got)
		}
	}
}

func TestExpandPlaceholders(t *testing.T) {
	c, err := Lookup("move")
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Permissions(Target, Expansion{Namespace: "ns", Kinds: map[string][]string{EveryMovedKind: {"clusters.cluster.x-k8s.io"}}})
	var found bool
	for _, p := range ps {
		if p.Resource == "clusters" && p.Group == "cluster.x-k8s.io" && p.Verb == "create" && p.Namespace == "ns" {
			found = true
		}
		if p.Resource == "*" {
			t.Errorf("a known placeholder was checked as a wildcard: %v", p)
		}
	}
	if !found {
		t.Fatalf("create clusters in ns not among %v", ps)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Fatal("an unknown command has a table")
	}
}
