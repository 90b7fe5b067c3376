package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/bundle"
	"github.com/capctl/capctl/pkg/diagnose"
)

// exitCode of a capctl run (0 when err is nil).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestDiagnoseLive: on a live management cluster with the real controllers, `capctl diagnose`
// finds an Available cluster healthy, names a paused cluster, and, with the infrastructure
// manager stopped, names it as the root cause of the new Machine that stays Provisioning.
func TestDiagnoseLive(t *testing.T) {
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	const name = "diag-1"
	e.createCluster(mgmt, ns, name, k8sVersion, 1)
	e.waitAvailable(mgmt, ns, name, 5*time.Minute)
	ctx := context.Background()

	out, err := e.capctl(mgmt, "diagnose", "cluster", name, "-n", ns)
	if exitCode(err) != 0 || !strings.Contains(out, "healthy, no rule found a problem") {
		t.Errorf("an Available cluster: exit %d\n%s", exitCode(err), out)
	}

	t.Run("paused", func(t *testing.T) {
		u, err := getCluster(ctx, mgmt, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		pause := func(p bool) {
			b, _ := json.Marshal(map[string]any{"spec": map[string]any{"paused": p}})
			if err := mgmt.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, b)); err != nil {
				t.Fatal(err)
			}
		}
		pause(true)
		defer pause(false)
		waitFor(t, time.Minute, "the core to report Paused=True", func() bool {
			u, err := getCluster(ctx, mgmt, ns, name)
			if err != nil {
				return false
			}
			st, _ := condition(u, "Paused")
			return st == "True"
		})
		out, err := e.capctl(mgmt, "diagnose", "cluster", name, "-n", ns, "-o", "json")
		var rep diagnose.Report
		if exitCode(err) != 2 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("paused: exit %d\n%s", exitCode(err), out)
		}
		root := rep.Root()
		if root == nil || root.Rule != diagnose.RuleClusterPaused || root.Object != "Cluster "+ns+"/"+name ||
			!containsPrefix(root.Next, "kubectl patch cluster "+name+" -n "+ns+" --type merge -p '{\"spec\":{\"paused\":false}}'") {
			t.Errorf("paused: root %+v", root)
		}
	})

	t.Run("infrastructure manager stopped", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "capd-system", Name: "capd-controller-manager"}, d); err != nil {
			t.Fatal(err)
		}
		scale := func(n int32) {
			b, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
			if err := mgmt.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, b)); err != nil {
				t.Fatal(err)
			}
		}
		scale(0)
		defer scale(1)
		waitFor(t, 2*time.Minute, "the CAPD pod to go", func() bool {
			pods := &corev1.PodList{}
			return mgmt.Client.List(ctx, pods, client.InNamespace("capd-system")) == nil && len(pods.Items) == 0
		})
		u, err := getCluster(ctx, mgmt, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if msg := scaleWorkers(ctx, mgmt, u, 1); msg != "" {
			t.Fatal(msg)
		}
		// With CAPD down its webhooks are down too, so the core may not even create the new
		// DockerMachine; either way the stopped manager is the root cause. A Machine that did get
		// to Provisioning is reported as waiting for it.
		var added string
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) && added == "" {
			ms, _ := listMachines(ctx, mgmt, ns)
			for _, m := range ms {
				if phase, _, _ := unstructured.NestedString(m.Object, "status", "phase"); phase == "Provisioning" {
					added = m.GetName()
				}
			}
			time.Sleep(2 * time.Second)
		}
		out, err := e.capctl(mgmt, "diagnose", "cluster", name, "-n", ns, "--stuck-after", "1s", "-o", "json")
		var rep diagnose.Report
		if exitCode(err) != 2 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("exit %d\n%s", exitCode(err), out)
		}
		root := rep.Root()
		if root == nil || root.Rule != diagnose.RuleProviderController || root.Responsible == nil ||
			root.Responsible.Provider != "infrastructure-docker" || root.Responsible.Namespace != "capd-system" || root.Responsible.Deployment != "capd-controller-manager" {
			t.Errorf("root: %+v", root)
		}
		if added != "" {
			found := false
			for _, f := range rep.Findings {
				if f.Rule == diagnose.RuleMachineProvisioning && f.Object == "Machine "+ns+"/"+added && f.Responsible != nil && f.Responsible.Provider == "infrastructure-docker" &&
					containsPrefix(f.Next, "kubectl logs -n capd-system deploy/capd-controller-manager | grep "+added) {
					found = true
				}
			}
			if !found {
				t.Errorf("no provisioning finding for %s:\n%s", added, out)
			}
		}
		_, _ = e.capctl(mgmt, "diagnose", "cluster", name, "-n", ns, "--stuck-after", "1s") // the text report, in the test log
		e.bundleReplaysLive(mgmt, name, root)
		if added == "" {
			// The root cause above is checked either way; the per-Machine finding needs a Machine.
			t.Skip("no new Machine reached Provisioning within 90s with CAPD (and its webhooks) stopped: the provisioning finding was not checked")
		}
	})
}

// bundleReplaysLive: a support bundle of the management cluster while cluster name is stuck.
// With no kubeconfig, `diagnose clusters --from-bundle` prints byte for byte the diagnosis the
// bundle made of the live cluster, `diagnose cluster --from-bundle` names the live root cause
// (want), and no Secret value of the management cluster, nor its kubeconfig's credentials, is
// anywhere in the bundle, as written or base64-encoded.
func (e *e2e) bundleReplaysLive(mgmt *livemgmt.Cluster, name string, want *diagnose.Finding) {
	t := e.t
	file := filepath.Join(t.TempDir(), "support.tar.gz")
	if out, err := e.capctl(mgmt, "diagnose", "bundle", "-n", ns, "-o", file); err != nil {
		t.Fatalf("diagnose bundle: %v\n%s", err, out)
	}
	ctx := context.Background()
	b, err := bundle.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(args ...string) (string, int) {
		cmd := e.command(ctx, nil, append(args, "--from-bundle", file, "--config", e.config)...)
		cmd.Env = append(cmd.Env, "KUBECONFIG="+filepath.Join(t.TempDir(), "no-kubeconfig"))
		out, err := cmd.CombinedOutput()
		t.Logf("$ capctl %s (no kubeconfig)\n%s", strings.Join(args, " "), out)
		return string(out), exitCode(err)
	}
	recorded, _ := b.File("diagnose.json")
	out, code := replay("diagnose", "clusters", "-n", ns, "-o", "json")
	var got, wantJSON bytes.Buffer
	if code != 2 || json.Compact(&got, []byte(out)) != nil || json.Compact(&wantJSON, recorded) != nil || got.String() != wantJSON.String() {
		t.Errorf("diagnose clusters --from-bundle: exit %d, not the bundle's live diagnosis:\n got %.800s\nwant %.800s", code, got.String(), wantJSON.String())
	}
	out, code = replay("diagnose", "cluster", name, "-n", ns, "--stuck-after", "1s", "-o", "json")
	var rep diagnose.Report
	if code != 2 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("diagnose cluster --from-bundle: exit %d\n%s", code, out)
	}
	if r := rep.Root(); r == nil || r.Rule != want.Rule || r.Object != want.Object || r.Responsible == nil || *r.Responsible != *want.Responsible {
		t.Errorf("diagnose cluster --from-bundle: root %+v, live %+v", r, want)
	}

	var all bytes.Buffer
	m, _ := b.File("manifest.json")
	all.Write(m)
	for _, f := range b.Manifest.Files {
		data, _ := b.File(f.Name)
		all.Write(data)
	}
	var values [][]byte
	secrets := &corev1.SecretList{}
	if err := mgmt.Client.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			values = append(values, v)
		}
	}
	kc, err := clientcmd.LoadFromFile(mgmt.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		values = append(values, a.ClientKeyData, a.ClientCertificateData, []byte(a.Token))
	}
	checked := 0
	for _, v := range values {
		if len(v) < 8 {
			continue
		}
		checked++
		for _, form := range [][]byte{v, []byte(base64.StdEncoding.EncodeToString(v))} {
			if bytes.Contains(all.Bytes(), form) {
				t.Errorf("a Secret value or credential of the management cluster is in the bundle: %.40q...", form)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d Secret values and credentials checked: the grep proves little", checked)
	}
	t.Logf("bundle: %d files, %d bytes uncompressed; %d Secret values and credentials, none in it", len(b.Manifest.Files), all.Len(), checked)
}

func containsPrefix(lines []string, p string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}
