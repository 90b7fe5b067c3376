package deletion

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
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
	kinds, err := p.permissionKinds(c)
	if err != nil {
		return err
	}
	return authz.Preflight(ctx, "delete", authz.Expansion{Kinds: kinds}, authz.Cluster{Side: authz.Management, Client: c})
}

// permissionKinds fills the table's placeholders for this plan: the kinds of every object it
// deletes.
func (p *Plan) permissionKinds(c client.Client) (map[string][]string, error) {
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
		return nil, err
	}
	return map[string][]string{authz.EveryComponentKind: kinds, authz.EveryListableKind: kinds}, nil
}

// CanI is `capctl auth can-i delete`, for `capctl delete --all`: the table's permissions with
// its placeholders filled from the same read-only plan the delete makes, and every kind that
// plan could not list (the delete would refuse its incomplete view) named as missing; so a yes
// here is a delete that passes its own checks. Where the plan cannot be made for want of a
// permission (the inventory), the table's fixed rules name what is missing.
func CanI(ctx context.Context, e env.Env, req authz.CanIRequest) (*authz.CanIResult, error) {
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	p, err := buildPlan(ctx, c, Request{All: true})
	switch {
	case err == nil:
		if req.Kinds, err = p.permissionKinds(c); err != nil {
			return nil, err
		}
		req.Unreadable = map[authz.Side][]authz.Unreadable{authz.Management: p.Unlisted}
	case apierrors.IsForbidden(err) || errors.Is(err, authz.ErrPermissions) || errors.Is(err, inventory.ErrNoInventory):
		// Nothing to fill the placeholders with: they stay "checked when it runs".
	default:
		return nil, fmt.Errorf("planning the delete to check its permissions: %w", err)
	}
	return authz.CanI(ctx, e, req)
}
