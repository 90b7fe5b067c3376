package rollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
)

// ClusterRestart is the restart of every Machine of one Cluster, its control plane's and its
// MachineDeployments', at one time: what a fleet rotation asks of each of its clusters.
type ClusterRestart struct {
	Namespace, Name string
	// At is the rollout.after to set. A target that asks At or later already is left alone, so
	// a re-run with the same At (a resumed rotation) patches nothing twice.
	At time.Time
	// DryRun sends the patches as server-side dry runs: the API server's admission checks them
	// and nothing changes.
	DryRun bool
}

// RestartCluster restarts one Cluster's control plane and MachineDeployments with the rules of
// `rollout restart` (through the Cluster's topology where one manages them, refusing paused
// objects and a rollout.after in the future) and returns the targets it patched, none when every
// one asks At already. A refused target refuses the whole cluster before any change.
func RestartCluster(ctx context.Context, c *cluster.Client, req ClusterRestart) ([]Target, error) {
	if req.At.IsZero() {
		return nil, fmt.Errorf("restarting cluster %s/%s: no time to restart at", req.Namespace, req.Name)
	}
	at := req.At.UTC().Truncate(time.Second)
	r := &resolver{c: c, ns: req.Namespace}
	all, err := r.clusterTargets(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	var targets []Target
	var refused []error
	for i := range all {
		t := &all[i]
		asked, err := r.askedAfter(ctx, t)
		if err != nil {
			return nil, err
		}
		if !asked.IsZero() && !asked.Before(at) {
			continue
		}
		if err := r.prepare(ctx, t, Restart, at); err != nil {
			refused = append(refused, err)
			continue
		}
		targets = append(targets, *t)
	}
	if len(refused) > 0 {
		return nil, &RefusedError{Reasons: refused}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	if err := checkPermissions(ctx, c, targets, req.Namespace); err != nil {
		return nil, err
	}
	var opts []client.PatchOption
	if req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := apply(ctx, c, targets, opts...); err != nil {
		return nil, err
	}
	return targets, nil
}

// clusterTargets are the Cluster's control plane (from spec.controlPlaneRef) and every one of
// its MachineDeployments.
func (r *resolver) clusterTargets(ctx context.Context, name string) ([]Target, error) {
	v, err := r.preferred(contract.Group)
	if err != nil {
		return nil, err
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(schema.GroupVersionKind{Group: contract.Group, Version: v, Kind: "Cluster"})
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, cl); err != nil {
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", r.ns, name, err)
	}
	var out []Target
	ref, _, _ := unstructured.NestedStringMap(cl.Object, "spec", "controlPlaneRef")
	if ref["kind"] != "" && ref["name"] != "" {
		m, err := r.c.Mapper.RESTMapping(schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]})
		if err != nil {
			return nil, fmt.Errorf("control plane kind %s of Cluster %s/%s: %w", ref["kind"], r.ns, name, err)
		}
		cp := &unstructured.Unstructured{}
		cp.SetGroupVersionKind(m.GroupVersionKind)
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: ref["name"]}, cp); err != nil {
			return nil, fmt.Errorf("reading control plane %s %s/%s of Cluster %s: %w", ref["kind"], r.ns, ref["name"], name, err)
		}
		t := newTarget(strings.ToLower(ref["kind"])+"/"+ref["name"], cp)
		t.Cluster = name
		out = append(out, t)
	}
	mds, err := r.listMachineDeployments(ctx, Request{All: true, Cluster: name})
	if err != nil {
		return nil, err
	}
	return append(out, mds...), nil
}

// askedAfter is the latest rollout.after asked of t: on the object, or on the topology of the
// Cluster that manages it (the topology controller copies it onto the object later). Zero: none.
func (r *resolver) askedAfter(ctx context.Context, t *Target) (time.Time, error) {
	var latest time.Time
	consider := func(s string) {
		if at, err := time.Parse(time.RFC3339, s); err == nil && at.After(latest) {
			latest = at
		}
	}
	gv, _ := schema.ParseGroupVersion(t.APIVersion)
	path := []string{"spec", "rollout", "after"}
	if gv.Version == "v1beta1" {
		path = []string{"spec", "rolloutAfter"}
	}
	if s, _, _ := unstructured.NestedString(t.obj.Object, path...); s != "" {
		consider(s)
	}
	cl, err := r.topologyCluster(ctx, t)
	if err != nil || cl == nil {
		return latest, err
	}
	if t.Kind != "MachineDeployment" {
		s, _, _ := unstructured.NestedString(cl.Object, topologyRolloutPath...)
		consider(s)
		return latest, nil
	}
	name := t.obj.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel]
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for _, md := range mds {
		if m, ok := md.(map[string]any); ok && m["name"] == name && name != "" {
			s, _, _ := unstructured.NestedString(m, "rollout", "after")
			consider(s)
		}
	}
	return latest, nil
}
