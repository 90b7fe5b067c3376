package cluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pagedReader serves n ConfigMaps in pages of the requested limit; expireAt > 0 answers the
// continuation of that page with 410 Expired, once.
type pagedReader struct {
	client.Reader
	n, expireAt, calls int
}

func (p *pagedReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	p.calls++
	o := (&client.ListOptions{}).ApplyOptions(opts)
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	if p.expireAt > 0 && start == p.expireAt {
		p.expireAt = 0
		return apierrors.NewResourceExpired("the continue token is too old")
	}
	ul := list.(*unstructured.UnstructuredList)
	end := min(start+int(o.Limit), p.n)
	for i := start; i < end; i++ {
		u := unstructured.Unstructured{}
		u.SetName(fmt.Sprintf("cm-%d", i))
		ul.Items = append(ul.Items, u)
	}
	if end < p.n {
		ul.SetContinue(strconv.Itoa(end))
	}
	return nil
}

func TestListPages(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	collect := func(r *pagedReader) ([]string, int, error) {
		var names []string
		restarts := 0
		err := ListPages(context.Background(), r, gvk, 3, func(items []unstructured.Unstructured, restart bool) error {
			if restart {
				names, restarts = nil, restarts+1
			}
			for _, u := range items {
				names = append(names, u.GetName())
			}
			return nil
		})
		return names, restarts, err
	}
	t.Run("pages", func(t *testing.T) {
		r := &pagedReader{n: 7}
		names, restarts, err := collect(r)
		if err != nil || len(names) != 7 || restarts != 0 || r.calls != 3 {
			t.Fatalf("got %v (restarts %d, %d requests, err %v), want 7 names in 3 requests", names, restarts, r.calls, err)
		}
	})
	t.Run("expired continuation starts again once", func(t *testing.T) {
		r := &pagedReader{n: 7, expireAt: 6}
		names, restarts, err := collect(r)
		if err != nil || len(names) != 7 || restarts != 1 || names[0] != "cm-0" {
			t.Fatalf("got %v (restarts %d, err %v), want the 7 names once after one restart", names, restarts, err)
		}
	})
	t.Run("expired twice is an error", func(t *testing.T) {
		r := &expiringReader{}
		err := ListPages(context.Background(), r, gvk, 3, func([]unstructured.Unstructured, bool) error { return nil })
		if !apierrors.IsResourceExpired(err) || r.calls != 2 {
			t.Fatalf("got %v after %d requests, want Expired after 2", err, r.calls)
		}
	})
}

type expiringReader struct {
	client.Reader
	calls int
}

func (e *expiringReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	e.calls++
	return apierrors.NewResourceExpired("expired")
}
