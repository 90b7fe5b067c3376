package diagnose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/diagnose"
)

// checkFleetMatchesClusters runs `diagnose clusters -A` with the workload reads on and compares
// each row with `diagnose cluster` of that cluster, finding by finding. The fleet reads a workload
// cluster only when the management side needs it (Input.NeedsWorkload), so for a cluster it did
// not read, what only a read can find is taken out of the per-cluster report first: the
// workload-cluster-unreachable warning and the evidence of capctl's own failed read.
// wantRead are the namespaces whose workload cluster the fleet must have read.
// It returns the fleet report and the fleet's management-side requests.
func checkFleetMatchesClusters(ctx context.Context, t *testing.T, mgmt *testenv.Env, timeout time.Duration, wantRead []string) (*diagnose.FleetReport, int64) {
	t.Helper()
	before := mgmt.Client.Requests()
	fr, err := diagnose.Clusters(ctx, mgmt.Client, diagnose.ClustersRequest{AllNamespaces: true,
		ClusterRequest: diagnose.ClusterRequest{Workload: true, WorkloadTimeout: timeout, Now: fixedNow}})
	if err != nil {
		t.Fatal(err)
	}
	requests := mgmt.Client.Requests() - before
	var read []string
	for _, row := range fr.Clusters {
		if row.Error != "" {
			t.Errorf("%s/%s: %s", row.Namespace, row.Name, row.Error)
			continue
		}
		if row.Workload != nil {
			read = append(read, row.Namespace)
		}
		rep, err := diagnose.Cluster(ctx, mgmt.Client, diagnose.ClusterRequest{Namespace: row.Namespace, Name: row.Name,
			Workload: true, WorkloadTimeout: timeout, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		if row.Workload == nil {
			rep = withoutOwnRead(rep)
		} else if row.Workload.Reachable != rep.Workload.Reachable || row.Workload.Nodes != rep.Workload.Nodes || row.Workload.CNI != rep.Workload.CNI {
			t.Errorf("%s/%s: fleet read the workload as %+v, diagnose cluster as %+v", row.Namespace, row.Name, row.Workload, rep.Workload)
		}
		got, _ := json.MarshalIndent(struct {
			Healthy  bool
			Problems int
			Root     *diagnose.Finding
			Findings []diagnose.Finding
		}{row.Healthy, row.Problems, row.Root, row.Findings}, "", " ")
		want, _ := json.MarshalIndent(struct {
			Healthy  bool
			Problems int
			Root     *diagnose.Finding
			Findings []diagnose.Finding
		}{rep.Healthy, rep.Problems(), rep.Root(), rep.Findings}, "", " ")
		if string(got) != string(want) {
			t.Errorf("%s/%s: the fleet row differs from diagnose cluster\nfleet:\n%s\ndiagnose cluster:\n%s", row.Namespace, row.Name, got, want)
		}
	}
	sort.Strings(read)
	sort.Strings(wantRead)
	if strings.Join(read, ",") != strings.Join(wantRead, ",") {
		t.Errorf("workload clusters read: %v, want %v", read, wantRead)
	}
	return fr, requests
}

// withoutOwnRead is a report as it is without reading the workload cluster.
func withoutOwnRead(rep *diagnose.Report) *diagnose.Report {
	out := *rep
	out.Workload = nil
	out.Findings = nil
	for _, f := range rep.Findings {
		if f.Rule == diagnose.RuleWorkloadUnreachable {
			continue
		}
		var ev []string
		for _, e := range f.Evidence {
			if !strings.HasPrefix(e, "capctl's own read failed too: ") {
				ev = append(ev, e)
			}
		}
		f.Evidence, f.Root = ev, false
		out.Findings = append(out.Findings, f)
	}
	if out.Findings == nil {
		out.Findings = []diagnose.Finding{}
	}
	for i := range out.Findings {
		if out.Findings[i].Severity != diagnose.SeverityInfo {
			out.Findings[i].Root = true
			break
		}
	}
	out.Healthy = out.Problems() == 0
	return &out
}

// testFleetOnAPIServer is TestRulesOnAPIServer's fleet part: the same findings as the
// per-cluster path, a workload API server that never answers costs its row its budget only, and
// the management-side requests do not grow with the number of clusters.
func testFleetOnAPIServer(ctx context.Context, t *testing.T, mgmt *testenv.Env) {
	// A workload API server that accepts connections and never answers, behind a cluster whose
	// Node is not Ready (so the fleet reads it).
	silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	cl := diagnosetest.NewCluster("silent", "c")
	cl.AddMachine(diagnosetest.Machine{Name: "c-cp-a", ControlPlane: true, Phase: "Running", DataSecret: true, ProviderID: "docker:////c-cp-a", NodeName: "c-cp-a",
		Conditions: []C{{Type: "NodeReady", Status: "Unknown", Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", Ago: m30}}})
	cl.Create(ctx, t, mgmt)
	diagnosetest.KubeconfigSecret(ctx, t, mgmt.Client, "silent", "c", diagnosetest.KubeconfigFor(silent.URL))

	wantRead := []string{"notjoined", "nocni", "drain", "deleting", "notready", "silent"}
	const timeout = 2 * time.Second
	fr, first := checkFleetMatchesClusters(ctx, t, mgmt, timeout, wantRead)
	for _, r := range fr.Clusters {
		if r.Namespace == "silent" {
			want := fmt.Sprintf("no answer within %s", timeout)
			if r.Workload == nil || r.Workload.Reachable || !strings.Contains(r.Workload.Error, want) {
				t.Errorf("silent workload API server: %+v, want unreachable with %q", r.Workload, want)
			}
			if r.Root == nil || r.Root.Rule != diagnose.RuleWorkloadUnreachable && r.Root.Rule != diagnose.RuleNodeNotReady {
				t.Errorf("silent workload API server: root %+v", r.Root)
			}
		}
	}

	// Ten more healthy clusters: the fleet's requests stay the same (the workload reads, one
	// kubeconfig Secret each, are those of the same clusters).
	for i := 0; i < 10; i++ {
		diagnosetest.NewCluster(fmt.Sprintf("more-%02d", i), "c").Create(ctx, t, mgmt)
	}
	before := mgmt.Client.Requests()
	if _, err := diagnose.Clusters(ctx, mgmt.Client, diagnose.ClustersRequest{AllNamespaces: true,
		ClusterRequest: diagnose.ClusterRequest{Workload: true, WorkloadTimeout: timeout, Now: fixedNow}}); err != nil {
		t.Fatal(err)
	}
	second := mgmt.Client.Requests() - before
	t.Logf("diagnose clusters -A: %d management-side requests for %d clusters, %d for %d", first, len(fr.Clusters), second, len(fr.Clusters)+10)
	if second != first {
		t.Errorf("management-side requests grew with the clusters: %d, then %d with 10 more", first, second)
	}
}
