package move

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestPlanReplacement plans replacing the v1beta1 management cluster, first by an empty API
// server (everything to install, the contract jump to the one capctl init installs) and then by
// the v1beta2 management cluster (nothing to install, the conversions read from its CRDs). Both
// plans read only: the source is unchanged.
func TestPlanReplacement(t *testing.T) {
	old, new := contractPair(t)
	empty := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	const ns = "runbook"
	total, before := seedV1beta1(t, old, ns, 1, nil)
	capi := 0
	for k := range before {
		if !strings.HasPrefix(k, "Secret/") {
			capi++
		}
	}

	r, err := PlanReplacement(ctx, old.Client, empty.Client, Options{Scope: Scope{Namespace: ns}})
	if err != nil {
		t.Fatalf("plan towards an empty cluster: %v", err)
	}
	var text strings.Builder
	_ = r.WriteText(&text)
	t.Logf("runbook towards an empty cluster:\n%s", text.String())
	if r.TargetInstalled || r.Contracts != (Contracts{Source: "v1beta1", Target: "v1beta2"}) || r.Objects != total || len(r.Clusters) != 1 {
		t.Errorf("plan: installed %v contracts %+v objects %d clusters %v", r.TargetInstalled, r.Contracts, r.Objects, r.Clusters)
	}
	for _, p := range r.Providers {
		if p.Action != "install" || p.SourceVersion != "v1.10.10" {
			t.Errorf("provider step %+v", p)
		}
	}
	wantInit := "capctl init --kubeconfig " + empty.Kubeconfig + " --core cluster-api --bootstrap kubeadm --control-plane kubeadm --infrastructure docker"
	if len(r.Providers) != 4 || r.InitCommand != wantInit {
		t.Errorf("init command %q, want %q", r.InitCommand, wantInit)
	}
	if len(r.Conversions) != capi || len(Lost(r.Conversions)) != 0 || len(r.Problems) != 0 {
		t.Errorf("conversions %d (want %d), losses %v, problems %v", len(r.Conversions), capi, Lost(r.Conversions), r.Problems)
	}
	wantMove := "capctl move --kubeconfig " + old.Kubeconfig + " -n " + ns + " --to-kubeconfig " + empty.Kubeconfig
	if r.MoveCommand != wantMove || len(r.Checks) == 0 {
		t.Errorf("move command %q, want %q", r.MoveCommand, wantMove)
	}
	if b, err := json.Marshal(r); err != nil || !strings.Contains(string(b), `"initCommand"`) {
		t.Errorf("JSON: %v %s", err, b)
	}

	r, err = PlanReplacement(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}})
	if err != nil {
		t.Fatalf("plan towards the v1beta2 cluster: %v", err)
	}
	text.Reset()
	_ = r.WriteText(&text)
	t.Logf("runbook towards the v1.14 cluster:\n%s", text.String())
	if !r.TargetInstalled || r.InitCommand != "" || len(r.Conversions) != capi || len(r.Problems) != 0 {
		t.Errorf("plan: installed %v init %q conversions %d problems %v", r.TargetInstalled, r.InitCommand, len(r.Conversions), r.Problems)
	}
	for _, p := range r.Providers {
		if p.Action != "ok" || p.TargetVersion != "v1.14.0" {
			t.Errorf("provider step %+v", p)
		}
	}
	after := snapshot(t, old.Client, ns)
	for k, o := range before {
		if a := after[k]; a == nil || a.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%s changed in the source by planning", k)
		}
	}
}
