package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// runCapctlTTY runs capctl as if a person sat at a terminal and typed stdin.
func runCapctlTTY(stdin string, args ...string) (stdout, stderr string, code int) {
	io, in, out, errOut := iostreams.Test()
	io.SetTTY(true, true, true)
	in.WriteString(stdin)
	code = runContext(context.Background(), args, io)
	return out.String(), errOut.String(), code
}

func TestDeleteCommand(t *testing.T) {
	testenv.Integration(t)
	// Validation happens before any cluster call.
	_, errOut, code := runCapctl(t, "delete", "--kubeconfig", "/nonexistent")
	if code == 0 || !strings.Contains(errOut, "should be specified or the --all flag should be set") || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("no provider: %d %s", code, errOut)
	}
	_, errOut, code = runCapctl(t, "delete", "--all", "-i", "docker", "--kubeconfig", "/nonexistent")
	if code == 0 || !strings.Contains(errOut, "--all cannot be combined") {
		t.Fatalf("--all with provider: %d %s", code, errOut)
	}

	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	testenv.CreateFromFile(t, env.Client, filepath.Join(testenv.RepoRoot(), "pkg", "deletion", "testdata", "components.yaml"))
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"),
	} {
		if err := inventory.Write(ctx, env.Client, p); err != nil {
			t.Fatal(err)
		}
	}
	capdAlive := func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "capd-system", Name: "capd-controller-manager"}, &appsv1.Deployment{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	kc := []string{"--kubeconfig", env.Kubeconfig}

	out, errOut, code := runCapctl(t, append([]string{"delete", "-i", "docker", "--dry-run"}, kc...)...)
	if code != 0 || !strings.Contains(out, "infrastructure-docker") || !strings.Contains(out, "Deployment 1") ||
		!strings.Contains(out, "capd-system (kept)") || !strings.Contains(out, "cert-manager: kept") || !capdAlive() {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, append([]string{"delete", "-i", "docker", "--dry-run", "-o", "json"}, kc...)...)
	var report struct {
		Plan struct {
			Providers []struct {
				Delete []struct{ Kind, Namespace, Name string } `json:"delete"`
			} `json:"providers"`
		} `json:"plan"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &report) != nil || len(report.Plan.Providers) != 1 || len(report.Plan.Providers[0].Delete) != 5 {
		t.Fatalf("dry run -o json: %d\n%s\n%s", code, out, errOut)
	}
	// No terminal, no --yes: refuse.
	_, errOut, code = runCapctl(t, append([]string{"delete", "-i", "docker"}, kc...)...)
	if code == 0 || !strings.Contains(errOut, "pass --yes") || !capdAlive() {
		t.Fatalf("non-terminal: %d %s", code, errOut)
	}
	// A terminal answering no.
	_, errOut, code = runCapctlTTY("n\n", append([]string{"delete", "-i", "docker"}, kc...)...)
	if code == 0 || !strings.Contains(errOut, "[y/N]") || !strings.Contains(errOut, "aborted") || !capdAlive() {
		t.Fatalf("answer no: %d %s", code, errOut)
	}
	// A wrong version is refused.
	_, errOut, code = runCapctl(t, append([]string{"delete", "-i", "docker:v1.13.0", "--yes"}, kc...)...)
	if code == 0 || !strings.Contains(errOut, "installed at version v1.14.0") || !capdAlive() {
		t.Fatalf("wrong version: %d %s", code, errOut)
	}
	// A terminal answering yes.
	out, errOut, code = runCapctlTTY("y\n", append([]string{"delete", "-i", "docker"}, kc...)...)
	if code != 0 || !strings.Contains(out, "Deleted provider infrastructure-docker v1.14.0 from namespace capd-system") || capdAlive() {
		t.Fatalf("answer yes: %d\n%s\n%s", code, out, errOut)
	}
	items, err := inventory.List(ctx, env.Client)
	if err != nil || len(items) != 1 {
		t.Fatalf("inventory: %+v %v", items, err)
	}
	// --yes, for scripts.
	out, errOut, code = runCapctl(t, append([]string{"delete", "--all", "--yes"}, kc...)...)
	if code != 0 || !strings.Contains(out, "Deleted provider cluster-api") {
		t.Fatalf("--all --yes: %d\n%s\n%s", code, out, errOut)
	}
	// Progress goes to stderr as plain lines (no terminal), ending with the total.
	if !regexp.MustCompile(`Deleting objects: (\d+)/(\d+)\n\d+ object\(s\) deleted`).MatchString(errOut) || strings.Contains(errOut, "\r") {
		t.Errorf("--all --yes: no progress on stderr:\n%s", errOut)
	}
}

// TestConfirmReadsOneShortLine: the [y/N] answer is read from at most one short line, so an
// endless standard input is a "no", not a read without end; a plain "y" still confirms.
func TestConfirmReadsOneShortLine(t *testing.T) {
	var out strings.Builder
	ok, err := confirm(userinputtest.Endless{}, &out, "Delete? [y/N] ")
	if err != nil || ok {
		t.Fatalf("an endless answer without a newline: ok=%v err=%v, want a no", ok, err)
	}
	if ok, err := confirm(strings.NewReader("y\n"), &out, "Delete? [y/N] "); err != nil || !ok {
		t.Fatalf("y: ok=%v err=%v", ok, err)
	}
	if ok, _ := confirm(strings.NewReader(""), &out, "Delete? [y/N] "); ok {
		t.Fatal("no answer confirmed")
	}
}
