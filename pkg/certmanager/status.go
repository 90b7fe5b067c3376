package certmanager

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/install"
)

// WebhookName is the name of cert-manager's webhook configurations.
const WebhookName = "cert-manager-webhook"

// ReadState is cert-manager's state as read without writing anything (Probe, by contrast,
// creates test objects).
type ReadState struct {
	// Installed: cert-manager Deployments exist in its namespace.
	Installed bool
	Version   string
	// Ready: every check passed.
	Ready  bool
	Checks []install.Check
}

// Status reads cert-manager's state without changing the cluster: its Deployments available,
// its webhook Service with ready endpoints and the CA injected into its webhook configurations,
// the same checks init waits on. Troubleshooting commands use it; init and upgrade use Probe.
func Status(ctx context.Context, c client.Client) (*ReadState, error) {
	st := &ReadState{}
	deps := &appsv1.DeploymentList{}
	if err := c.List(ctx, deps, client.InNamespace(Namespace)); err != nil {
		return nil, fmt.Errorf("listing cert-manager Deployments in %s: %w", Namespace, err)
	}
	if len(deps.Items) == 0 {
		return st, nil
	}
	st.Installed = true
	if o, err := Owner(ctx, c); err == nil {
		st.Version = o.Version
	}
	var objs []unstructured.Unstructured
	for _, d := range deps.Items {
		objs = append(objs, install.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}.Object())
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		err := c.Get(ctx, client.ObjectKey{Name: WebhookName}, &u)
		switch {
		case err == nil:
			objs = append(objs, u)
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		default:
			return nil, fmt.Errorf("reading %s %s: %w", kind, WebhookName, err)
		}
	}
	st.Checks = install.Diagnose(ctx, c, objs, false)
	st.Ready = true
	for _, ch := range st.Checks {
		st.Ready = st.Ready && ch.Ready
	}
	return st, nil
}
