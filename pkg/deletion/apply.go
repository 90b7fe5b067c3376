package deletion

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// Result is what Apply did.
type Result struct {
	Deleted int `json:"deleted"`
	// AlreadyGone counts objects that had disappeared before their DELETE.
	AlreadyGone int `json:"alreadyGone"`
	// InventoryRemoved are the providers whose inventory entry was removed.
	InventoryRemoved []inventory.Provider `json:"inventoryRemoved"`
}

// Progress is called after each deletion (err is nil on success).
type Progress func(done, total int, o Object, err error)

// ApplyRequest is the confirmed half of `capctl delete`: the plan BuildPlan made (and the user
// confirmed), how many objects to delete at once, and who hears of each object.
type ApplyRequest struct {
	Plan *Plan
	// Concurrency is how many objects are deleted at once (0: the default).
	Concurrency int
	// Progress, when set, hears of every object deleted or failed.
	Progress Progress
}

// Validate refuses a request without a plan.
func (r ApplyRequest) Validate() error {
	if r.Plan == nil {
		return errors.New("a delete needs its plan (BuildPlan) before it is applied")
	}
	return nil
}

// Apply is the deleting half of `capctl delete` on the Env's management cluster (apply).
func Apply(ctx context.Context, e env.Env, req ApplyRequest) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	return apply(ctx, c, req.Plan, req.Concurrency, req.Progress)
}

// apply deletes what the plan lists: per provider its components, then (only if all of them
// went) its inventory entry, so a failed delete can simply be run again; then cert-manager.
func apply(ctx context.Context, c client.Client, plan *Plan, concurrency int, progress Progress) (*Result, error) {
	if err := plan.Complete(); err != nil {
		return nil, err
	}
	if err := plan.checkPermissions(ctx, c); err != nil {
		return nil, err
	}
	if concurrency <= 0 {
		concurrency = 8
	}
	res := &Result{}
	total := plan.Total()
	done := 0
	var mu sync.Mutex
	var errs []error
	deleteGroup := func(objs []Object) []error {
		// Delete rank by rank; objects within a rank in parallel.
		var failed []error
		for start := 0; start < len(objs); {
			end := start
			for end < len(objs) && deleteRank(objs[end]) == deleteRank(objs[start]) {
				end++
			}
			var g errgroup.Group
			g.SetLimit(concurrency)
			for _, o := range objs[start:end] {
				g.Go(func() error {
					gone, err := deleteObject(ctx, c, o)
					mu.Lock()
					defer mu.Unlock()
					done++
					switch {
					case err != nil:
						failed = append(failed, err)
					case gone:
						res.AlreadyGone++
					default:
						res.Deleted++
					}
					if progress != nil {
						progress(done, total, o, err)
					}
					return nil // failures are collected, so every object of the rank is tried
				})
			}
			_ = g.Wait()
			start = end
		}
		return failed
	}
	for _, pp := range plan.Providers {
		if pp.Provider.Type == provider.CoreProviderType && len(errs) > 0 {
			errs = append(errs, fmt.Errorf("%s was not deleted because other providers could not be: it goes last, so the management cluster stays readable", pp.Provider.ManifestLabel()))
			continue
		}
		failed := deleteGroup(pp.Delete)
		if len(failed) > 0 {
			errs = append(errs, fmt.Errorf("%s: %d object(s) could not be deleted, its inventory entry is kept so that running delete again finishes the job: %w",
				pp.Provider.ManifestLabel(), len(failed), errors.Join(failed...)))
			continue
		}
		if err := inventory.Delete(ctx, c, pp.Provider); err != nil {
			errs = append(errs, err)
			continue
		}
		res.InventoryRemoved = append(res.InventoryRemoved, pp.Provider)
	}
	if plan.CertManager.Deleted {
		if len(errs) > 0 {
			errs = append(errs, errors.New("cert-manager was not deleted because some provider components could not be deleted"))
		} else if failed := deleteGroup(plan.CertManager.Delete); len(failed) > 0 {
			errs = append(errs, fmt.Errorf("cert-manager: %w", errors.Join(failed...)))
		}
	}
	return res, errors.Join(errs...)
}

// deleteObject deletes one object (background propagation), retrying transient errors
// (cluster.IsTransient); an object already gone is fine.
func deleteObject(ctx context.Context, c client.Client, o Object) (gone bool, err error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(o.GVK)
	obj.SetNamespace(o.Namespace)
	obj.SetName(o.Name)
	err = cluster.Retry(ctx, cluster.DefaultBackoff, func() error {
		err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if apierrors.IsConflict(err) {
			// The DELETE carries no precondition (no resourceVersion, no UID): a 409 says the
			// object changed while the server handled it, and sending the DELETE again deletes
			// what is there now. That is the re-read a conflict needs, so it is retried.
			return cluster.Again(err)
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("deleting %s: %w", o, err)
	}
	return false, nil
}
