package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// laggingMapper serves its kind from the servedAfter-th lookup on, as discovery does a moment
// after a CRD was Established.
type laggingMapper struct {
	meta.RESTMapper
	lookups, servedAfter int
}

func (m *laggingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.lookups++
	if m.servedAfter == 0 || m.lookups < m.servedAfter {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &meta.RESTMapping{GroupVersionKind: gk.WithVersion(versions[0])}, nil
}

func TestWaitServed(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "Provider"}
	m := &laggingMapper{servedAfter: 3}
	if err := WaitServed(context.Background(), m, gvk, 10*time.Second); err != nil || m.lookups != 3 {
		t.Errorf("served on the third lookup: err %v after %d lookups", err, m.lookups)
	}
	m = &laggingMapper{}
	if err := WaitServed(context.Background(), m, gvk, 250*time.Millisecond); !errors.Is(err, ErrTimedOut) || m.lookups < 2 {
		t.Errorf("never served: err %v after %d lookups, want ErrTimedOut", err, m.lookups)
	}
}
