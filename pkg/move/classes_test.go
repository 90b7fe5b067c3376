package move

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestMoveCopiesClassFromAnotherNamespace moves a namespace whose Cluster uses a ClusterClass of
// another namespace (spec.topology.classRef.namespace): the dry run says the class and its
// templates are copied and kept; the move creates them in the target in their own namespace
// (created there) and leaves them in the source, and the verification covers them.
func TestMoveCopiesClassFromAnotherNamespace(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	src.CreateNamespaces(t, "xns-classes", "xns-team")
	cls := &builder{tb: t, c: src.Client, ns: "xns-classes"}
	classObjs := cls.addClusterClass("shared")
	team := &builder{tb: t, c: src.Client, ns: "xns-team"}
	clusterObjs := team.addCluster("web", clusterOpts{cpCount: 1, workers: 1})
	web := obj(vCore, "Cluster", "web", nil)
	web.SetNamespace("xns-team")
	if err := mergePatch(ctx, src.Client, web, map[string]any{"spec": map[string]any{"topology": map[string]any{
		"classRef": map[string]any{"name": "shared", "namespace": "xns-classes"}, "version": "v1.34.0"}}}); err != nil {
		t.Fatal(err)
	}
	classesBefore := snapshot(t, src.Client, "xns-classes")

	g, err := Plan(ctx, src.Client, Scope{Namespace: "xns-team"})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if g.Count() != clusterObjs+classObjs {
		t.Errorf("dry run plans %d objects, want %d (the cluster's %d and the class with its templates)", g.Count(), clusterObjs+classObjs, clusterObjs)
	}
	kept := 0
	for _, n := range g.Moved() {
		if n.Ref.Namespace == "xns-classes" {
			if !n.KeepInSource {
				t.Errorf("%s is planned to be deleted from the source", n.Ref)
			}
			kept++
		}
	}
	if kept != classObjs || !strings.Contains(strings.Join(g.Warnings, "\n"), "ClusterClass xns-classes/shared") {
		t.Errorf("dry run: %d objects of xns-classes kept in the source, warnings %q", kept, g.Warnings)
	}

	rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: "xns-team"}})
	if err != nil {
		t.Fatalf("move: %v (differences %v)", err, rep.Differences)
	}
	if !rep.Verified || rep.KeptInSource != classObjs || rep.Deleted != clusterObjs {
		t.Errorf("report: verified %v kept %d deleted %d", rep.Verified, rep.KeptInSource, rep.Deleted)
	}
	if left := snapshot(t, src.Client, "xns-team"); len(left) != 0 {
		t.Errorf("left in xns-team: %v", keys(left))
	}
	inSource := snapshot(t, src.Client, "xns-classes")
	inTarget := snapshot(t, dst.Client, "xns-classes")
	for k, b := range classesBefore {
		for where, got := range map[string]map[string]*unstructured.Unstructured{"source": inSource, "target": inTarget} {
			g := got[k]
			switch {
			case g == nil:
				t.Errorf("%s: missing in the %s", k, where)
			case !equality.Semantic.DeepEqual(content(b), content(g)):
				t.Errorf("%s: spec differs in the %s from the source before the move", k, where)
			case !equality.Semantic.DeepEqual(nilIfEmpty(b.GetAnnotations()), nilIfEmpty(g.GetAnnotations())):
				t.Errorf("%s: annotations in the %s %v, before the move %v (still paused?)", k, where, g.GetAnnotations(), b.GetAnnotations())
			}
		}
	}
	if len(inTarget) != classObjs || len(inSource) != classObjs {
		t.Errorf("xns-classes: %d objects in the source, %d in the target, want %d", len(inSource), len(inTarget), classObjs)
	}
	if got := snapshot(t, dst.Client, "xns-team"); len(got) != clusterObjs {
		t.Errorf("target xns-team: %d objects, want %d", len(got), clusterObjs)
	}
}
