// Package contract is the one home of Cluster API contract rules: the contract capctl implements,
// which provider contracts a core contract accepts, which version a CRD stores, and the check that
// a management cluster's Cluster API speaks a contract capctl can work with.
//
// It sits below the feature packages and the domain services (repository, certmanager, install)
// and imports none of them.
package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Current is the Cluster API contract capctl implements, as clusterctl v1.14 does.
const Current = "v1beta2"

// ClusterCRD is the CRD whose storage version tells a management cluster's contract.
const ClusterCRD = "clusters.cluster.x-k8s.io"

// Compatible returns the provider contracts a core provider of contract core accepts: v1beta2
// accepts v1beta1 providers too (until v1beta1 reaches end of life, as in clusterctl v1.14); any
// other contract accepts only itself.
func Compatible(core string) []string {
	if core == Current {
		return []string{Current, "v1beta1"}
	}
	return []string{core}
}

// IsCompatible tells whether a provider implementing provider can run with a core of contract core.
func IsCompatible(core, provider string) bool {
	return slices.Contains(Compatible(core), provider)
}

// Usable tells whether capctl can install or upgrade to a provider implementing contract c.
func Usable(c string) bool { return IsCompatible(Current, c) }

// StorageVersion returns the version a CRD stores its objects in ("" when none is marked, which
// the API server never allows for a created CRD). Listing at the storage version needs no
// conversion webhook.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// ErrUnsupported marks a management cluster whose Cluster API speaks a contract capctl cannot use.
var ErrUnsupported = errors.New("unsupported management cluster contract")

// ErrNotInstalled marks a management cluster without Cluster API, for commands that need it.
var ErrNotInstalled = errors.New("cluster API is not installed")

// CheckOption relaxes CheckManagementCluster for the commands that need it.
type CheckOption func(*checkOptions)

type checkOptions struct {
	allowNotInstalled bool
	allowed           []string
}

// AllowNotInstalled accepts a cluster without Cluster API (init and generate use it: init is what
// installs it).
func AllowNotInstalled() CheckOption {
	return func(o *checkOptions) { o.allowNotInstalled = true }
}

// AllowContract accepts a management cluster that stores Clusters at contract c too (upgrade
// accepts v1beta1: upgrading is how such a cluster reaches v1beta2).
func AllowContract(c string) CheckOption {
	return func(o *checkOptions) { o.allowed = append(o.allowed, c) }
}

// ManagementContract is the version the management cluster stores Clusters at (its Cluster CRD's
// storage version): the contract its Cluster API speaks. A cluster without the CRD is
// ErrNotInstalled.
func ManagementContract(ctx context.Context, c client.Reader) (string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: ClusterCRD}, crd); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return "", fmt.Errorf("%w: CRD %s not found; install it with `capctl init` first", ErrNotInstalled, ClusterCRD)
		}
		return "", fmt.Errorf("reading CRD %s to check the management cluster's contract: %w", ClusterCRD, err)
	}
	stored := StorageVersion(crd)
	if stored == "" {
		return "", fmt.Errorf("%w: CRD %s marks no storage version", ErrUnsupported, ClusterCRD)
	}
	return stored, nil
}

// CheckManagementCluster is clusterctl v1.14's management-cluster contract check: the Cluster CRD
// must exist and store its objects at the current contract's version (or one allowed by opts).
func CheckManagementCluster(ctx context.Context, c client.Reader, opts ...CheckOption) error {
	o := checkOptions{allowed: []string{Current}}
	for _, opt := range opts {
		opt(&o)
	}
	stored, err := ManagementContract(ctx, c)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && o.allowNotInstalled {
			return nil
		}
		return err
	}
	if slices.Contains(o.allowed, stored) {
		return nil
	}
	return fmt.Errorf("%w: this management cluster stores Clusters as %s (CRD %s); capctl works with %q management clusters only: upgrade it with clusterctl of its own version first",
		ErrUnsupported, stored, ClusterCRD, Current)
}
