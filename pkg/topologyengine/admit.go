package topologyengine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RefusedError is a change upstream's admission refuses: what the real webhook would answer
// when the change is applied, so the plan stops there for the clusters it concerns.
type RefusedError struct {
	Object string // "ClusterClass ns/name" or "Cluster ns/name"
	Err    error
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: %v", e.Object, e.Err) }
func (e *RefusedError) Unwrap() error { return e.Err }

// NotComputed names what makes a class's effect impossible to compute without running a
// Runtime Extension (external patches, discovered variables, an external upgrade plan), or "".
func NotComputed(class *clusterv1.ClusterClass) string {
	for _, p := range class.Spec.Patches {
		if p.External != nil {
			return fmt.Sprintf("ClusterClass %s uses the external patch %q (a Runtime Extension): its effect is not computed", class.Name, p.Name)
		}
	}
	if class.Spec.Upgrade.External.GenerateUpgradePlanExtension != "" {
		return fmt.Sprintf("ClusterClass %s computes upgrade plans with the Runtime Extension %q: not computed", class.Name, class.Spec.Upgrade.External.GenerateUpgradePlanExtension)
	}
	return ""
}

// withInlineVariables is a planned class with status.variables as the ClusterClass controller
// would write them from its inline variables (sorted by name, one inline definition each), so
// upstream's variable defaulting and validation see the planned definitions.
func withInlineVariables(class *clusterv1.ClusterClass) *clusterv1.ClusterClass {
	c := class.DeepCopy()
	vars := make([]clusterv1.ClusterClassStatusVariable, 0, len(c.Spec.Variables))
	for _, v := range c.Spec.Variables {
		vars = append(vars, clusterv1.ClusterClassStatusVariable{
			Name:                v.Name,
			DefinitionsConflict: ptr.To(false),
			Definitions: []clusterv1.ClusterClassStatusVariableDefinition{{
				From:                      clusterv1.VariableDefinitionFromInline,
				Required:                  v.Required,
				DeprecatedV1Beta1Metadata: v.DeprecatedV1Beta1Metadata,
				Schema:                    v.Schema,
			}},
		})
	}
	sort.SliceStable(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	c.Status.Variables = vars
	return c
}

// AdmitClass runs upstream's ClusterClass admission on a planned class: the update checks
// against the live class (removed classes still in use, versions the clusters already run,
// health checks) or the create checks for a new one. The clusters it checks are the view's, so
// planned Clusters count as they will be.
func (e *Engine) AdmitClass(ctx context.Context, live, planned *clusterv1.ClusterClass) error {
	wh := &admission.ClusterClass{Client: e.view}
	var err error
	if live == nil {
		_, err = wh.ValidateCreate(ctx, planned.DeepCopy())
	} else {
		_, err = wh.ValidateUpdate(ctx, live.DeepCopy(), planned.DeepCopy())
	}
	if err != nil {
		return &RefusedError{Object: "ClusterClass " + planned.Namespace + "/" + planned.Name, Err: err}
	}
	return nil
}

// noWorkloadClusters answers upstream code that would read a workload cluster (MachinePool
// versions): topology plan reads only the management cluster.
type noWorkloadClusters struct{}

var errNoWorkload = errors.New("topology plan does not read workload clusters")

func (noWorkloadClusters) GetReader(context.Context, client.ObjectKey) (client.Reader, error) {
	return nil, errNoWorkload
}

// AdmitCluster runs upstream's Cluster admission on a planned Cluster: defaulting (which fills
// variable defaults from the planned class) and the update or create validation.
func (e *Engine) AdmitCluster(ctx context.Context, live, planned *clusterv1.Cluster) (*clusterv1.Cluster, error) {
	wh := &admission.Cluster{Client: e.view, ClusterCacheReader: noWorkloadClusters{}}
	c := planned.DeepCopy()
	name := "Cluster " + c.Namespace + "/" + c.Name
	if err := wh.Default(ctx, c); err != nil {
		return nil, &RefusedError{Object: name, Err: err}
	}
	var err error
	if live == nil {
		_, err = wh.ValidateCreate(ctx, c)
	} else {
		_, err = wh.ValidateUpdate(ctx, live.DeepCopy(), c)
	}
	if err != nil {
		return nil, &RefusedError{Object: name, Err: err}
	}
	return c, nil
}
