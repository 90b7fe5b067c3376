package clusterinit

import (
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/provider"
)

// TestRenderResult: a first init lists each provider with what was done, cert-manager's line and
// the next step; a dry run says nothing changed; a no-op names what is installed already.
func TestRenderResult(t *testing.T) {
	plan := []Planned{
		{Name: "cluster-api", Type: provider.CoreProviderType, Version: "v1.14.0", Namespace: "capi-system", Contract: "v1beta2", Action: ActionInstalled, Objects: 40},
		{Name: "kubeadm", Type: provider.BootstrapProviderType, Version: "v1.14.0", Namespace: "capi-kubeadm-bootstrap-system", Contract: "v1beta2", Action: ActionAlreadyThere},
	}
	var b strings.Builder
	if err := RenderResult(&b, &Result{FirstRun: true, Providers: plan, CertManager: &certmanager.Result{Action: certmanager.ActionInstalled, Version: "v1.21.1", Applied: 6}}); err != nil {
		t.Fatal(err)
	}
	out := testenv.Squeeze(b.String())
	for _, want := range []string{
		"NAME TYPE VERSION NAMESPACE CONTRACT ACTION",
		"cluster-api CoreProvider v1.14.0 capi-system v1beta2 installed (40 objects)",
		"bootstrap-kubeadm BootstrapProvider v1.14.0 capi-kubeadm-bootstrap-system v1beta2 already installed, skipped",
		"cert-manager v1.21.1 installed (6 objects).",
		"Your management cluster has been initialized successfully!",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %q:\n%s", want, out)
		}
	}

	b.Reset()
	dry := []Planned{{Name: "docker", Type: provider.InfrastructureProviderType, Version: "v1.14.0", Namespace: "capd-system", Contract: "v1beta2", Action: ActionWouldInstall, Objects: 12, Unchecked: 3}}
	if err := RenderResult(&b, &Result{DryRun: true, Providers: dry}); err != nil {
		t.Fatal(err)
	}
	if out := testenv.Squeeze(b.String()); !strings.Contains(out, "would apply 12 objects (3 not checkable yet)") || !strings.Contains(out, "Dry run: nothing was changed.") ||
		strings.Contains(out, "initialized successfully") {
		t.Errorf("dry run:\n%s", out)
	}

	b.Reset()
	if err := RenderResult(&b, &Result{NoOp: true, Providers: plan[:1]}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "Nothing to do: every requested provider is already installed at that version (cluster-api v1.14.0 in capi-system).\n"; got != want {
		t.Errorf("no-op %q, want %q", got, want)
	}

	b.Reset()
	RenderResolved(&b, []Planned{{Name: "kubeadm", Type: provider.ControlPlaneProviderType, Version: "v1.14.0", Action: ActionInstall, Default: true}})
	if out := testenv.Squeeze(b.String()); !strings.HasPrefix(out, "Resolved providers:\n") || !strings.Contains(out, "install (first-init default)") {
		t.Errorf("resolved:\n%s", out)
	}
}
