package clusterinit

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/lease"
)

// LockName is the Lease in kube-system that one init at a time holds.
const LockName = "capctl-init-lock"

// ErrInitRunning is returned when another init holds the management cluster.
var ErrInitRunning = errors.New("another capctl init is running on this management cluster")

// lockInit takes the init lock (kube-system always exists, before init creates anything).
func lockInit(ctx context.Context, c client.Client) (*lease.Set, context.Context, error) {
	host := ""
	if cc, ok := c.(*cluster.Client); ok {
		host = cc.Config.Host
	}
	lk, lctx, err := lease.Acquire(ctx, c, []string{metav1.NamespaceSystem}, lease.Info{Name: LockName, Operation: "init", Target: host, Scope: "the management cluster"})
	var le *lease.LockedError
	if errors.As(err, &le) {
		return nil, ctx, fmt.Errorf("%w: %s holds it since %s; wait for it to finish, then run init again (it installs only what is still missing). Details: %v",
			ErrInitRunning, le.Holder, le.Since.UTC().Format("2006-01-02T15:04:05Z"), err)
	}
	return lk, lctx, err
}
