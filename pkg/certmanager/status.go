package certmanager

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/install"
)

// WebhookName is the name of cert-manager's webhook configurations.
const WebhookName = "cert-manager-webhook"

// ReadState is cert-manager's state as read without writing anything (Probe, by contrast,
// creates test objects).
type ReadState struct {
	// Installed: cert-manager's Certificate kind is served (CRD certificates.cert-manager.io).
	Installed bool
	Version   string
	// Ready: every check passed.
	Ready  bool
	Checks []install.Check
	// Unread are the kinds that could not be read: the checks that needed them were not made.
	Unread []authz.Unreadable
}

// Status reads cert-manager's state without changing the cluster: the Certificates of the cluster
// Ready (what the providers' webhooks need from it), and, when cert-manager runs in its usual
// namespace, its Deployments available, its webhook Service with ready endpoints and the CA
// injected into its webhook configurations (the checks init waits on). Troubleshooting commands
// use it; init and upgrade use Probe.
//
// A read the server refuses (RBAC) does not stop it: the kind is named in Unread, the checks that
// needed it are left out and Ready is false, so nothing unread is reported ready.
func Status(ctx context.Context, c client.Client) (*ReadState, error) {
	st := &ReadState{}
	var reads authz.Reads
	defer func() { st.Unread = reads.Unread() }()
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if ok, err := reads.Get(ctx, c, client.ObjectKey{Name: CertificatesCRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return st, nil
		}
		return nil, fmt.Errorf("reading CRD %s: %w", CertificatesCRD, err)
	} else if !ok {
		return st, nil // whether it is installed is not known
	}
	st.Installed = true
	if o, err := Owner(ctx, c); err == nil {
		st.Version = o.Version
	}
	deps := &appsv1.DeploymentList{}
	if _, err := reads.List(ctx, c, deps, client.InNamespace(Namespace)); err != nil {
		return nil, fmt.Errorf("listing cert-manager Deployments in %s: %w", Namespace, err)
	}
	var objs []unstructured.Unstructured
	for _, d := range deps.Items {
		objs = append(objs, install.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}.Object())
	}
	if len(deps.Items) > 0 {
		for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
			u := unstructured.Unstructured{}
			u.SetAPIVersion("admissionregistration.k8s.io/v1")
			u.SetKind(kind)
			ok, err := reads.Get(ctx, c, client.ObjectKey{Name: WebhookName}, &u)
			switch {
			case ok:
				objs = append(objs, u)
			case err == nil, apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			default:
				return nil, fmt.Errorf("reading %s %s: %w", kind, WebhookName, err)
			}
		}
	}
	for _, ch := range install.Diagnose(ctx, c, objs, false) {
		if authz.Tolerable(ch.Err) {
			reads.Add(authz.FromError(ch.Object.Namespace, ch.Err))
			continue
		}
		st.Checks = append(st.Checks, ch)
	}

	certs := &unstructured.UnstructuredList{}
	certs.SetAPIVersion("cert-manager.io/v1")
	certs.SetKind("CertificateList")
	if _, err := reads.List(ctx, c, certs); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing cert-manager Certificates: %w", err)
	}
	for i := range certs.Items {
		cert := &certs.Items[i]
		ch := install.Check{Object: install.RefOf(cert), What: "certificate-ready", Ready: false}
		ch.Reason = fmt.Sprintf("Certificate %s/%s has no Ready condition yet: cert-manager has not issued it", cert.GetNamespace(), cert.GetName())
		conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] != "Ready" {
				continue
			}
			ch.Ready = m["status"] == "True"
			ch.Reason = fmt.Sprintf("Certificate %s/%s Ready=%v (%v): %v", cert.GetNamespace(), cert.GetName(), m["status"], m["reason"], m["message"])
		}
		if ch.Ready {
			ch.Reason = ""
		}
		st.Checks = append(st.Checks, ch)
	}
	st.Ready = len(reads.Unread()) == 0
	for _, ch := range st.Checks {
		st.Ready = st.Ready && ch.Ready
	}
	return st, nil
}
