package topologyengine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/exp/topology/scope"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reads below give upstream's generator the blueprint and current state the topology
// controller gives it. They follow the controller's rules (which objects, found how, which
// errors stop the reconcile); upstream keeps its own reads unexported.

// readBlueprint reads the class's templates: the ClusterClass's infrastructure cluster and
// control plane templates, the control plane's machine template, and each MachineDeployment and
// MachinePool class's templates.
func readBlueprint(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster, class *clusterv1.ClusterClass) (*scope.ClusterBlueprint, error) {
	ns := class.Namespace
	bp := &scope.ClusterBlueprint{
		Topology:           cluster.Spec.Topology,
		ClusterClass:       class,
		ControlPlane:       &scope.ControlPlaneBlueprint{},
		MachineDeployments: map[string]*scope.MachineDeploymentBlueprint{},
		MachinePools:       map[string]*scope.MachinePoolBlueprint{},
	}
	var err error
	if bp.InfrastructureClusterTemplate, err = template(ctx, c, class.Spec.Infrastructure.TemplateRef, ns, "infrastructure cluster template"); err != nil {
		return nil, err
	}
	if bp.ControlPlane.Template, err = template(ctx, c, class.Spec.ControlPlane.TemplateRef, ns, "control plane template"); err != nil {
		return nil, err
	}
	if bp.HasControlPlaneInfrastructureMachine() {
		if bp.ControlPlane.InfrastructureMachineTemplate, err = template(ctx, c, class.Spec.ControlPlane.MachineInfrastructure.TemplateRef, ns, "control plane machine template"); err != nil {
			return nil, err
		}
	}
	if bp.HasControlPlaneMachineHealthCheck() {
		bp.ControlPlane.HealthCheck = class.Spec.ControlPlane.HealthCheck
	}
	for _, mdc := range class.Spec.Workers.MachineDeployments {
		md := &scope.MachineDeploymentBlueprint{HealthCheck: mdc.HealthCheck}
		mdc.Metadata.DeepCopyInto(&md.Metadata)
		what := fmt.Sprintf("MachineDeployment class %q", mdc.Class)
		if md.InfrastructureMachineTemplate, err = template(ctx, c, mdc.Infrastructure.TemplateRef, ns, what+" infrastructure template"); err != nil {
			return nil, err
		}
		if md.BootstrapTemplate, err = template(ctx, c, mdc.Bootstrap.TemplateRef, ns, what+" bootstrap template"); err != nil {
			return nil, err
		}
		bp.MachineDeployments[mdc.Class] = md
	}
	for _, mpc := range class.Spec.Workers.MachinePools {
		mp := &scope.MachinePoolBlueprint{}
		mpc.Metadata.DeepCopyInto(&mp.Metadata)
		what := fmt.Sprintf("MachinePool class %q", mpc.Class)
		if mp.InfrastructureMachinePoolTemplate, err = template(ctx, c, mpc.Infrastructure.TemplateRef, ns, what+" infrastructure template"); err != nil {
			return nil, err
		}
		if mp.BootstrapTemplate, err = template(ctx, c, mpc.Bootstrap.TemplateRef, ns, what+" bootstrap template"); err != nil {
			return nil, err
		}
		bp.MachinePools[mpc.Class] = mp
	}
	return bp, nil
}

// MissingTemplateError is a template the class references that is neither in the planned files
// nor on the management cluster.
type MissingTemplateError struct {
	What, Kind, Namespace, Name string
}

func (e *MissingTemplateError) Error() string {
	return fmt.Sprintf("the %s %s %s/%s is neither in the given files nor on the management cluster; add it to -f", e.What, e.Kind, e.Namespace, e.Name)
}

func template(ctx context.Context, c client.Reader, ref clusterv1.ClusterClassTemplateReference, ns, what string) (*unstructured.Unstructured, error) {
	u, err := external.Get(ctx, c, ref.ToObjectReference(ns))
	if apierrors.IsNotFound(err) {
		return nil, &MissingTemplateError{What: what, Kind: ref.Kind, Namespace: ns, Name: ref.Name}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s %s/%s: %w", what, ref.Kind, ns, ref.Name, err)
	}
	return u, nil
}

// readCurrent reads the objects the topology controller manages for the Cluster today.
func readCurrent(ctx context.Context, c client.Reader, s *scope.Scope) error {
	cl := s.Current.Cluster
	cur := s.Current
	cur.ControlPlane = &scope.ControlPlaneState{}
	var err error
	if cl.Spec.InfrastructureRef.IsDefined() {
		if cur.InfrastructureCluster, err = owned(ctx, c, cl.Spec.InfrastructureRef, cl.Namespace, "Cluster "+cl.Name); err != nil {
			return err
		}
	}
	if cl.Spec.ControlPlaneRef.IsDefined() {
		if cur.ControlPlane.Object, err = owned(ctx, c, cl.Spec.ControlPlaneRef, cl.Namespace, "Cluster "+cl.Name); err != nil {
			return err
		}
		if s.Blueprint.HasControlPlaneInfrastructureMachine() {
			if err := readControlPlaneMachines(ctx, c, cur.ControlPlane); err != nil {
				return err
			}
		}
	}
	if cur.MachineDeployments, err = readMachineDeployments(ctx, c, s); err != nil {
		return err
	}
	cur.MachinePools, err = readMachinePools(ctx, c, s)
	return err
}

// owned reads a referenced object and checks it carries the topology-owned label, as the
// controller refuses to manage an object a person put there.
func owned(ctx context.Context, c client.Reader, ref clusterv1.ContractVersionedObjectReference, ns, from string) (*unstructured.Unstructured, error) {
	u, err := external.GetObjectFromContractVersionedRef(ctx, c, ref, ns)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s referenced from %s: %w", ref.Kind, ns, ref.Name, from, err)
	}
	if _, ok := u.GetLabels()[clusterv1.ClusterTopologyOwnedLabel]; !ok {
		return nil, fmt.Errorf("%s %s/%s referenced from %s is not topology owned (no %s label)", u.GetKind(), ns, u.GetName(), from, clusterv1.ClusterTopologyOwnedLabel)
	}
	return u, nil
}

// readControlPlaneMachines reads the control plane's machine template (v1beta2 contract path
// spec.machineTemplate.spec.infrastructureRef) and its MachineHealthCheck (same name as the
// control plane, optional).
func readControlPlaneMachines(ctx context.Context, c client.Reader, cp *scope.ControlPlaneState) error {
	obj := cp.Object
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "machineTemplate", "spec", "infrastructureRef", "apiGroup")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "machineTemplate", "spec", "infrastructureRef", "kind")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "machineTemplate", "spec", "infrastructureRef", "name")
	if kind == "" || name == "" {
		return fmt.Errorf("%s %s/%s has no spec.machineTemplate.spec.infrastructureRef (a v1beta2 control plane provider is required)", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	ref := clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: kind, Name: name}
	var err error
	if cp.InfrastructureMachineTemplate, err = owned(ctx, c, ref, obj.GetNamespace(), obj.GetKind()+" "+obj.GetName()); err != nil {
		return err
	}
	cp.MachineHealthCheck, err = healthCheck(ctx, c, obj.GetNamespace(), obj.GetName())
	return err
}

func healthCheck(ctx context.Context, c client.Reader, ns, name string) (*clusterv1.MachineHealthCheck, error) {
	mhc := &clusterv1.MachineHealthCheck{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, mhc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading MachineHealthCheck %s/%s: %w", ns, name, err)
	}
	return mhc, nil
}

func topologyOwnedOf(cl *clusterv1.Cluster) []client.ListOption {
	return []client.ListOption{
		client.InNamespace(cl.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cl.Name, clusterv1.ClusterTopologyOwnedLabel: ""},
	}
}

func readMachineDeployments(ctx context.Context, c client.Reader, s *scope.Scope) (scope.MachineDeploymentsStateMap, error) {
	cl := s.Current.Cluster
	list := &clusterv1.MachineDeploymentList{}
	if err := c.List(ctx, list, topologyOwnedOf(cl)...); err != nil {
		return nil, fmt.Errorf("listing the MachineDeployments of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	state := scope.MachineDeploymentsStateMap{}
	for i := range list.Items {
		md := &list.Items[i]
		topo := md.Labels[clusterv1.ClusterTopologyMachineDeploymentNameLabel]
		if topo == "" {
			return nil, fmt.Errorf("MachineDeployment %s/%s has no %s label", md.Namespace, md.Name, clusterv1.ClusterTopologyMachineDeploymentNameLabel)
		}
		if _, dup := state[topo]; dup {
			return nil, fmt.Errorf("two MachineDeployments of Cluster %s carry the topology name %q", cl.Name, topo)
		}
		st := &scope.MachineDeploymentState{Object: md}
		if md.DeletionTimestamp.IsZero() {
			var err error
			from := "MachineDeployment " + md.Name
			if st.BootstrapTemplate, err = owned(ctx, c, md.Spec.Template.Spec.Bootstrap.ConfigRef, md.Namespace, from); err != nil {
				return nil, err
			}
			if st.InfrastructureMachineTemplate, err = owned(ctx, c, md.Spec.Template.Spec.InfrastructureRef, md.Namespace, from); err != nil {
				return nil, err
			}
		}
		var err error
		if st.MachineHealthCheck, err = healthCheck(ctx, c, md.Namespace, md.Name); err != nil {
			return nil, err
		}
		state[topo] = st
	}
	return state, nil
}

func readMachinePools(ctx context.Context, c client.Reader, s *scope.Scope) (scope.MachinePoolsStateMap, error) {
	cl := s.Current.Cluster
	list := &clusterv1.MachinePoolList{}
	if err := c.List(ctx, list, topologyOwnedOf(cl)...); err != nil {
		if meta.IsNoMatchError(err) {
			return scope.MachinePoolsStateMap{}, nil
		}
		return nil, fmt.Errorf("listing the MachinePools of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	state := scope.MachinePoolsStateMap{}
	for i := range list.Items {
		mp := &list.Items[i]
		topo := mp.Labels[clusterv1.ClusterTopologyMachinePoolNameLabel]
		if topo == "" {
			return nil, fmt.Errorf("MachinePool %s/%s has no %s label", mp.Namespace, mp.Name, clusterv1.ClusterTopologyMachinePoolNameLabel)
		}
		st := &scope.MachinePoolState{Object: mp}
		if mp.DeletionTimestamp.IsZero() {
			var err error
			from := "MachinePool " + mp.Name
			if st.BootstrapObject, err = owned(ctx, c, mp.Spec.Template.Spec.Bootstrap.ConfigRef, mp.Namespace, from); err != nil {
				return nil, err
			}
			if st.InfrastructureMachinePoolObject, err = owned(ctx, c, mp.Spec.Template.Spec.InfrastructureRef, mp.Namespace, from); err != nil {
				return nil, err
			}
		}
		state[topo] = st
	}
	return state, nil
}
