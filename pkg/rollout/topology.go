package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/contract"
)

// A restart of a MachineDeployment or control plane that a Cluster's topology manages goes
// through the Cluster: the topology controller owns the object's fields (server-side apply), so
// it copies spec.topology's rollout.after onto the object, and a rollout.after it sets there
// replaces a value written on the object directly. Cluster API has the topology fields since
// v1.13; a management cluster whose Cluster kind lacks them gets the direct write, as before.

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// topologyRolloutPath is where the Cluster kind keeps the control plane's rollout.after.
var topologyRolloutPath = []string{"spec", "topology", "controlPlane", "rollout", "after"}

// topologyCluster is the Cluster whose topology manages t, or nil when none does (no topology
// label, no topology on the Cluster, or a Cluster kind without the topology rollout fields).
func (r *resolver) topologyCluster(ctx context.Context, t *Target) (*unstructured.Unstructured, error) {
	if _, owned := t.obj.GetLabels()[clusterv1.ClusterTopologyOwnedLabel]; !owned || t.Cluster == "" {
		return nil, nil
	}
	v, err := r.preferred(contract.Group)
	if err != nil {
		return nil, err
	}
	gvk := schema.GroupVersionKind{Group: contract.Group, Version: v, Kind: "Cluster"}
	if r.topologyFields == nil {
		ok, err := r.hasField(ctx, gvk, topologyRolloutPath)
		if err != nil {
			return nil, err
		}
		r.topologyFields = &ok
	}
	if !*r.topologyFields {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: t.Namespace, Name: t.Cluster}
	if cl, ok := r.clusters[key]; ok {
		return cl, nil
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(gvk)
	if err := r.c.Get(ctx, key, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("can't restart %s: it is managed by the topology of Cluster %s, which does not exist: %s", t.Kind, key, t.Ref)
		}
		return nil, fmt.Errorf("reading Cluster %s, whose topology manages %s: %w", key, t.Ref, err)
	}
	if _, ok, _ := unstructured.NestedMap(cl.Object, "spec", "topology"); !ok {
		cl = nil
	}
	if r.clusters == nil {
		r.clusters = map[client.ObjectKey]*unstructured.Unstructured{}
	}
	r.clusters[key] = cl
	return cl, nil
}

// restartThroughTopology sets rollout.after to now in the Cluster's topology for t, the control
// plane's or t's MachineDeployment topology's, refusing as a direct restart would (a paused
// Cluster, a rollout.after in the future).
func restartThroughTopology(t *Target, cl *unstructured.Unstructured, now time.Time) error {
	at := fmt.Sprintf("Cluster %s/%s", cl.GetNamespace(), cl.GetName())
	if paused, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused"); paused {
		return fmt.Errorf("can't restart %s: it is managed by the topology of %s, which is paused (spec.paused), so nothing would roll out (unpause the Cluster first): %s", t.Kind, at, t.Ref)
	}
	if _, paused := cl.GetAnnotations()[clusterv1.PausedAnnotation]; paused {
		return fmt.Errorf("can't restart %s: it is managed by the topology of %s, which is paused (remove annotation '%s' first): %s", t.Kind, at, clusterv1.PausedAnnotation, t.Ref)
	}
	var base, field string
	var current map[string]any
	var ops []jsonOp
	if t.Kind == "MachineDeployment" {
		name := t.obj.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel]
		mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
		i := -1
		for j, md := range mds {
			if m, ok := md.(map[string]any); ok && m["name"] == name && name != "" {
				i, current = j, m
			}
		}
		if i < 0 {
			return fmt.Errorf("can't restart MachineDeployment: it is labelled as managed by the topology of %s, which has no MachineDeployment topology %q (label %s): %s", at, name, clusterv1.ClusterTopologyMachineDeploymentNameLabel, t.Ref)
		}
		base = fmt.Sprintf("/spec/topology/workers/machineDeployments/%d", i)
		field = fmt.Sprintf("spec.topology.workers.machineDeployments[name=%s].rollout.after", name)
		// The index is where the topology was when read; the test makes the patch fail rather
		// than set another MachineDeployment's field if the list changed since.
		ops = append(ops, jsonOp{Op: "test", Path: base + "/name", Value: name})
	} else {
		base = "/spec/topology/controlPlane"
		field = strings.Join(topologyRolloutPath, ".")
		m, ok, _ := unstructured.NestedMap(cl.Object, "spec", "topology", "controlPlane")
		if !ok {
			ops = append(ops, jsonOp{Op: "add", Path: base, Value: map[string]any{}})
		}
		current = m
	}
	stamp := now.UTC().Format(time.RFC3339)
	rollout, hasRollout := current["rollout"].(map[string]any)
	if s, ok := rollout["after"].(string); ok && s != "" {
		if after, err := time.Parse(time.RFC3339, s); err == nil && after.After(now) {
			return fmt.Errorf("can't update %s (remove '%s' of %s first): %s", t.Kind, field, at, t.Ref)
		}
	}
	if hasRollout {
		// The decision above read this rollout; the test makes the patch fail if someone changed
		// it since (a rollout.after set to the future meanwhile is not overwritten).
		ops = append(ops, jsonOp{Op: "test", Path: base + "/rollout", Value: rollout},
			jsonOp{Op: "add", Path: base + "/rollout/after", Value: stamp})
	} else {
		ops = append(ops, jsonOp{Op: "add", Path: base + "/rollout", Value: map[string]any{"after": stamp}})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	t.Via = at + " " + field
	t.Patch = string(patch)
	t.patchType = types.JSONPatchType
	t.through = cl
	t.ops = ops
	return nil
}

// clusterPatch is one Cluster's JSON patch for all of its targets. Each target's operations test
// what its decision read (the MachineDeployment topology's name at its index, the rollout it
// found), so a Cluster whose topology changed meanwhile is left untouched. It does not test the
// resourceVersion: the controllers update a Cluster's status all the time, and a restart of a
// busy cluster would then fail more often than not (a live run failed so right after a worker
// rollout).
func clusterPatch(targets []*Target) ([]byte, error) {
	var ops []jsonOp
	for _, t := range targets {
		ops = append(ops, t.ops...)
	}
	return json.Marshal(ops)
}
