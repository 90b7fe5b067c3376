package diagnose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/diagnose"
)

// TestPartialViewOnAPIServer: a user who may not read webhook configurations, cert-manager's
// Certificates, nor Deployments anywhere but in the provider namespaces other than capd-system
// gets `diagnose cluster`, `diagnose clusters` and `get providers` as a partial view: what could be
// read is shown, each kind it could not read is named (with namespace and verb), and the checks
// that needed them say "not checked" instead of passing. They used to stop over the first
// forbidden list. The admin's view of the same cluster is complete and unchanged.
func TestPartialViewOnAPIServer(t *testing.T) {
	testenv.Integration(t)
	testenv.FixturesDir(t)
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{})
	diagnosetest.Management(ctx, t, env)
	diagnosetest.NewCluster("fine", "c").Create(ctx, t, env)
	// A webhook that does not answer and a stopped infrastructure controller: problems the
	// admin sees and the restricted user must not report as fine.
	diagnosetest.WebhookWithoutEndpoints(ctx, t, env.Client, diagnosetest.ProviderOf("control-plane-kubeadm"))
	docker := diagnosetest.ProviderOf("infrastructure-docker")
	diagnosetest.Deployment(ctx, t, env.Client, docker.Namespace, docker.Deployment, nil, nil, false)

	env.GrantAllBut(t, "partial", map[string][]string{
		"validatingwebhookconfigurations.admissionregistration.k8s.io": nil,
		"mutatingwebhookconfigurations.admissionregistration.k8s.io":   nil,
		"certificates.cert-manager.io":                                 nil,
		"deployments.apps":                                             nil,
	})
	for _, p := range diagnosetest.Providers {
		if p.Namespace != docker.Namespace {
			env.GrantIn(t, "partial", p.Namespace, "apps", "deployments", "get", "list")
		}
	}
	user := env.User(t, "partial")
	opts := diagnose.ClusterRequest{Namespace: "fine", Name: "c", Now: fixedNow}

	t.Run("admin: complete view", func(t *testing.T) {
		m, err := diagnose.Providers(ctx, env.Client)
		if err != nil {
			t.Fatal(err)
		}
		if m.Partial() || len(m.NotChecked) > 0 {
			t.Fatalf("the admin's view is partial: %v %v", m.Unread, m.NotChecked)
		}
		for _, p := range m.Providers {
			if len(p.NotChecked) > 0 {
				t.Errorf("%s: not checked for the admin: %v", p.ManifestLabel, p.NotChecked)
			}
		}
		rep, err := diagnose.Cluster(ctx, env.Client, opts)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Partial() || len(rep.NotChecked) > 0 || rep.Healthy {
			t.Fatalf("admin: complete %v, not checked %v, healthy %v", !rep.Partial(), rep.NotChecked, rep.Healthy)
		}
		checkFinding(t, rep, diagnose.RuleProviderController, "Provider capd-system/infrastructure-docker", "infrastructure-docker", "", "")
		checkFinding(t, rep, diagnose.RuleProviderWebhook, "Provider capi-kubeadm-control-plane-system/control-plane-kubeadm", "control-plane-kubeadm", "", "")
	})

	wantUnread := []string{
		"certificates.cert-manager.io (list in all namespaces: forbidden)",
		"deployments.apps (list in namespace capd-system: forbidden)",
		"deployments.apps (list in namespace cert-manager: forbidden)",
		"mutatingwebhookconfigurations.admissionregistration.k8s.io (list in all namespaces: forbidden)",
		"validatingwebhookconfigurations.admissionregistration.k8s.io (list in all namespaces: forbidden)",
	}
	t.Run("get providers", func(t *testing.T) {
		m, err := diagnose.Providers(ctx, user)
		if err != nil {
			t.Fatalf("get providers stops over a forbidden kind: %v", err)
		}
		checkUnread(t, m.Unread, wantUnread)
		for _, p := range m.Providers {
			controller := p.NotChecked["controller"] != ""
			if controller != (p.Namespace == docker.Namespace) {
				t.Errorf("%s: controller not checked = %v", p.ManifestLabel, controller)
			}
			if !controller && !p.ControllerAvailable {
				t.Errorf("%s: a readable controller is not available: %+v", p.ManifestLabel, p.Deployments)
			}
			if p.NotChecked["webhook"] == "" {
				t.Errorf("%s: webhook checked without reading the webhook configurations", p.ManifestLabel)
			}
		}
		if cm := m.CertManager; cm == nil || cm.Ready || len(cm.NotChecked) == 0 {
			t.Errorf("cert-manager reported without reading it: %+v", cm)
		}
		var text bytes.Buffer
		if err := diagnose.RenderProviders(&text, m); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + text.String())
		for _, w := range append([]string{"not checked", "Partial view: 5 kind(s) could not be read"}, wantUnread...) {
			if !strings.Contains(text.String(), w) {
				t.Errorf("get providers text does not say %q", w)
			}
		}
		for _, line := range strings.Split(text.String(), "\n") {
			if strings.HasPrefix(line, "capd-system") && (strings.Contains(line, "available") || strings.Contains(line, "answers")) {
				t.Errorf("the unread provider is shown as working: %q", line)
			}
		}
		js, _ := json.Marshal(m)
		var doc struct {
			Unread []authz.Unreadable `json:"unread"`
		}
		if err := json.Unmarshal(js, &doc); err != nil || len(doc.Unread) != len(wantUnread) || doc.Unread[0].Verb != "list" || !doc.Unread[0].Forbidden {
			t.Errorf("json unread: %s", js)
		}
	})

	t.Run("diagnose cluster", func(t *testing.T) {
		rep, err := diagnose.Cluster(ctx, user, opts)
		if err != nil {
			t.Fatalf("diagnose cluster stops over a forbidden kind: %v", err)
		}
		if !rep.Partial() || rep.Healthy {
			t.Fatalf("a partial diagnosis is complete %v / healthy %v", !rep.Partial(), rep.Healthy)
		}
		checkUnread(t, rep.Unread, wantUnread)
		for _, f := range rep.Findings {
			if f.Rule == diagnose.RuleProviderController || f.Rule == diagnose.RuleProviderWebhook || f.Rule == diagnose.RuleCertManager {
				t.Errorf("a finding from unread data: %+v", f)
			}
		}
		got := map[string]bool{}
		for _, n := range rep.NotChecked {
			got[n.Rule+" "+n.Object] = true
			if !strings.HasPrefix(n.Reason, "cannot read ") {
				t.Errorf("not-checked reason: %q", n.Reason)
			}
		}
		for _, w := range []string{
			diagnose.RuleProviderController + " Provider capd-system/infrastructure-docker",
			diagnose.RuleProviderWebhook + " Provider capd-system/infrastructure-docker",
			diagnose.RuleProviderWebhook + " Provider capi-kubeadm-control-plane-system/control-plane-kubeadm",
			diagnose.RuleCertManager + " cert-manager",
		} {
			if !got[w] {
				t.Errorf("not reported as not checked: %s (got %v)", w, rep.NotChecked)
			}
		}
		var text bytes.Buffer
		if err := diagnose.RenderText(&text, rep, diagnose.RenderOptions{Now: fixedNow()}); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + text.String())
		for _, w := range []string{"not fully checked", "Not checked: " + diagnose.RuleProviderController + " for Provider capd-system/infrastructure-docker: cannot read deployments.apps (list in namespace capd-system: forbidden)"} {
			if !strings.Contains(text.String(), w) {
				t.Errorf("diagnose text does not say %q", w)
			}
		}
	})

	t.Run("diagnose clusters", func(t *testing.T) {
		fr, err := diagnose.Clusters(ctx, user, diagnose.ClustersRequest{ClusterRequest: diagnose.ClusterRequest{Now: fixedNow}, AllNamespaces: true})
		if err != nil {
			t.Fatalf("diagnose clusters stops over a forbidden kind: %v", err)
		}
		if !fr.Partial() || fr.Healthy || len(fr.Clusters) != 1 || fr.Clusters[0].Healthy || len(fr.Clusters[0].NotChecked) == 0 {
			t.Fatalf("fleet: complete %v healthy %v rows %+v", !fr.Partial(), fr.Healthy, fr.Clusters)
		}
		checkUnread(t, fr.Unread, wantUnread)
	})
}

func checkUnread(t *testing.T, us []authz.Unreadable, want []string) {
	t.Helper()
	var got []string
	for _, u := range us {
		got = append(got, u.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unread kinds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
