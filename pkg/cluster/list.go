package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file is capctl's one home for reading a long list page by page (LIST with limit and
// continue): a large kind (thousands of Machines) is then held one page at a time while it is
// read, not as one response body and its decoded copy at once.

// ListPages lists the objects of kind gvk (the kind, not its List) pageSize at a time and calls
// page with each page's items; opts add the namespace or a selector. The pages are one
// consistent snapshot. When the API server can no longer continue it (a list that took longer
// than its compaction window: 410 Expired), the listing starts once more from the beginning, and
// page is told so with restart on that first page, so that a caller that collects drops what it
// had. An error from page stops the listing and is returned as is.
func ListPages(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, pageSize int64,
	page func(items []unstructured.Unstructured, restart bool) error, opts ...client.ListOption) error {
	opts = append(opts, client.Limit(pageSize))
	// once lists every page from the first; restart: this is the second listing.
	once := func(restart bool) error {
		cont := ""
		for first := true; ; first = false {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
				return err
			}
			if err := page(list.Items, restart && first); err != nil {
				return err
			}
			if cont = list.GetContinue(); cont == "" {
				return nil
			}
		}
	}
	if err := once(false); !apierrors.IsResourceExpired(err) {
		return err
	}
	return once(true)
}
