package deletion

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
)

// Complete refuses a plan built from an incomplete listing. A kind delete could not list may
// hold the providers' components: deleting what was seen and then the inventory entries would
// leave those objects behind with nothing recording them.
func (p *Plan) Complete() error {
	if len(p.Unlisted) == 0 {
		return nil
	}
	return &authz.IncompleteError{Command: "capctl delete", Unreadable: p.Unlisted}
}

// checkPermissions is delete's permission preflight (the table's "delete" rules) with the kinds
// of every object the plan deletes: a delete that found a missing permission half-way left the
// providers partly deleted. The listing itself was complete (Complete), so the kinds listed are
// the ones the plan found.
func (p *Plan) checkPermissions(ctx context.Context, c client.Client) error {
	var objs []unstructured.Unstructured
	add := func(os []Object) {
		for _, o := range os {
			u := unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GVK)
			objs = append(objs, u)
		}
	}
	add(p.CertManager.Delete)
	for _, pp := range p.Providers {
		add(pp.Delete)
		if pp.NamespaceDeleted {
			u := unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("Namespace")
			objs = append(objs, u)
		}
	}
	kinds, err := authz.Resources(c.RESTMapper(), objs)
	if err != nil {
		return err
	}
	return authz.Preflight(ctx, "delete", authz.Expansion{Kinds: map[string][]string{authz.EveryComponentKind: kinds, authz.EveryListableKind: kinds}},
		authz.Cluster{Side: authz.Management, Client: c})
}
