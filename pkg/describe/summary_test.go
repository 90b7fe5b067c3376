package describe_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

// TestSummarizeFleet: `describe clusters` over a small fleet (60 clusters in 3 namespaces, with
// ClusterClass, provisioning, paused and deleting clusters, and one whose control plane kind is
// not served) prints the recorded rows, for every namespace and for one, and reads the same
// number of requests for 60 clusters as for 20: one list per kind, not one read per cluster.
func TestSummarizeFleet(t *testing.T) {
	setup(t)
	ctx := context.Background()
	const clusters, perNamespace = 60, 20
	env.CreateNamespaces(t, describetest.FleetNamespaces(clusters, perNamespace)...)
	var objs []*unstructured.Unstructured
	for _, s := range describetest.Fleet(clusters, perNamespace) {
		for _, o := range s.Objects {
			if o.GetKind() != "Secret" { // the summary reads none: seeding them would only take time
				objs = append(objs, o)
			}
		}
	}
	describetest.ApplyConcurrently(ctx, t, env.Client, objs, 32)

	summarize := func(opts describe.SummaryRequest) ([]describe.ClusterSummary, int64) {
		t.Helper()
		c, err := cluster.New(cluster.Options{Kubeconfig: env.Kubeconfig})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := describe.Summarize(ctx, c, opts)
		if err != nil {
			t.Fatal(err)
		}
		return rows, c.Requests()
	}
	// Only the fleet's namespaces: the package's other scenarios share the server.
	fleetOnly := func(rows []describe.ClusterSummary) []describe.ClusterSummary {
		var out []describe.ClusterSummary
		for _, r := range rows {
			if len(r.Namespace) > 6 && r.Namespace[:6] == "fleet-" {
				out = append(out, r)
			}
		}
		return out
	}
	all, allRequests := summarize(describe.SummaryRequest{AllNamespaces: true})
	if got := len(fleetOnly(all)); got != clusters {
		t.Fatalf("%d fleet rows, want %d", got, clusters)
	}
	one, oneRequests := summarize(describe.SummaryRequest{Namespace: "fleet-001"})
	if len(one) != perNamespace {
		t.Fatalf("%d rows in fleet-001, want %d", len(one), perNamespace)
	}
	if allRequests != oneRequests {
		t.Errorf("%d requests for every namespace, %d for one: the requests must not grow with the clusters", allRequests, oneRequests)
	}

	// A cluster whose control plane kind no provider serves: its row has no version, and the
	// summary of the others still prints.
	odd := describetest.Obj("cluster.x-k8s.io/v1beta2", "Cluster", "fleet-002", "odd-control-plane", nil, map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": "controlplane.example.com", "kind": "FooControlPlane", "name": "odd"},
	}, nil)
	describetest.Apply(ctx, t, env.Client, []*unstructured.Unstructured{odd})
	all, _ = summarize(describe.SummaryRequest{AllNamespaces: true})
	all = fleetOnly(all)
	if len(all) != clusters+1 {
		t.Fatalf("%d fleet rows, want %d", len(all), clusters+1)
	}

	// Lists read in pages of 6 give the same rows, one request per page.
	restore := describe.SetListPageSize(6)
	paged, pagedRequests := summarize(describe.SummaryRequest{Namespace: "fleet-002"})
	restore()
	unpaged, unpagedRequests := summarize(describe.SummaryRequest{Namespace: "fleet-002"})
	if !reflect.DeepEqual(paged, unpaged) {
		t.Errorf("paged rows differ from unpaged ones:\n%+v\n%+v", paged, unpaged)
	}
	// fleet-002 has 21 Clusters (4 pages) and 20 control planes (4 pages).
	if want := unpagedRequests + 3 + 3; pagedRequests != want {
		t.Errorf("%d requests paged, want %d (%d unpaged, 3 more pages of Clusters and 3 of control planes)", pagedRequests, want, unpagedRequests)
	}

	var table bytes.Buffer
	if err := describe.RenderSummary(&table, all, describe.RenderOptions{Now: describetest.Now}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fleet-summary", table.Bytes())
	// The data form (-o json) holds the ClusterClass too; creation times are the server's.
	for i := range all {
		all[i].Created = time.Time{}
	}
	var data bytes.Buffer
	if err := output.WriteStructured(&data, output.JSON, all[:8]); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fleet-summary-json", data.Bytes())
	for _, r := range one {
		if r.Namespace != "fleet-001" {
			t.Errorf("row of namespace %s in the summary of fleet-001", r.Namespace)
		}
	}
}
