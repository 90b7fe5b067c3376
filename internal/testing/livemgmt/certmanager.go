package livemgmt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cert-manager stand-in: what cert-manager's controller and cainjector do for the
// providers' Certificates, nothing else. The fixtures' cert-manager is its CRDs only (no
// controller binary is built here), so the harness issues each Certificate's Secret itself
// (self-signed, as the providers' selfSigned Issuers ask) and injects the CA into the objects
// annotated cert-manager.io/inject-ca-from(-secret).

var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"}

func (k *kubelet) syncCertificates(ctx context.Context) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(certificateGVK)
	if err := k.r.List(ctx, list); err != nil {
		if isNoMatch(err) {
			return nil
		}
		return err
	}
	for i := range list.Items {
		cert := &list.Items[i]
		if cert.GetDeletionTimestamp() != nil {
			continue
		}
		secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		cn, _, _ := unstructured.NestedString(cert.Object, "spec", "commonName")
		if secretName == "" {
			continue
		}
		sc, err := k.c.host.certs.get(cn, dnsNames)
		if err != nil {
			return err
		}
		if err := k.ensureSecret(ctx, cert, secretName, sc); err != nil {
			return fmt.Errorf("Secret %s/%s of Certificate %s: %w", cert.GetNamespace(), secretName, cert.GetName(), err)
		}
		if err := k.markCertificateReady(ctx, cert); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

func (k *kubelet) ensureSecret(ctx context.Context, cert *unstructured.Unstructured, name string, sc *servingCert) error {
	data := map[string][]byte{"tls.crt": sc.certPEM, "tls.key": sc.keyPEM, "ca.crt": sc.certPEM}
	s := &corev1.Secret{}
	err := k.r.Get(ctx, client.ObjectKey{Namespace: cert.GetNamespace(), Name: name}, s)
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: cert.GetNamespace(), Name: name, Annotations: map[string]string{
				"cert-manager.io/certificate-name": cert.GetName(), "cert-manager.io/issuer-name": issuerName(cert),
			}},
			Type: corev1.SecretTypeTLS, Data: data,
		}
		if err := k.c.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return err // AlreadyExists: created a moment ago, not yet in the informer
		}
		return nil
	}
	if err != nil {
		return err
	}
	if bytes.Equal(s.Data["tls.crt"], sc.certPEM) && bytes.Equal(s.Data["tls.key"], sc.keyPEM) {
		return nil
	}
	s.Data = data
	return k.c.Client.Update(ctx, s)
}

func issuerName(cert *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	return n
}

func (k *kubelet) markCertificateReady(ctx context.Context, cert *unstructured.Unstructured) error {
	conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return nil
		}
	}
	now := time.Now().UTC()
	status := map[string]any{
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": cert.GetGeneration(),
			"message": "Certificate is up to date and has not expired", "lastTransitionTime": now.Format(time.RFC3339),
		}},
		"notBefore": now.Add(-time.Hour).Format(time.RFC3339), "notAfter": now.Add(90 * 24 * time.Hour).Format(time.RFC3339),
		"renewalTime": now.Add(60 * 24 * time.Hour).Format(time.RFC3339), "revision": int64(1),
	}
	c := cert.DeepCopy()
	c.Object["status"] = status
	return k.c.Client.Status().Update(ctx, c)
}

// caFor returns the CA bundle an inject-ca-from(-secret) annotation names ("" if not there yet).
func (k *kubelet) caFor(ctx context.Context, key, from string) ([]byte, error) {
	ns, name, ok := strings.Cut(from, "/")
	if !ok {
		return nil, nil
	}
	secretName := name
	if key == annInjectCA {
		cert := &unstructured.Unstructured{}
		cert.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
		if err := k.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
			if apierrors.IsNotFound(err) || isNoMatch(err) {
				return nil, nil
			}
			return nil, err
		}
		secretName, _, _ = unstructured.NestedString(cert.Object, "spec", "secretName")
	}
	s := &corev1.Secret{}
	if err := k.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if ca := s.Data["ca.crt"]; len(ca) > 0 {
		return ca, nil
	}
	return s.Data["tls.crt"], nil
}

const (
	annInjectCA           = "cert-manager.io/inject-ca-from"
	annInjectCAFromSecret = "cert-manager.io/inject-ca-from-secret"
)

func injection(m metav1.Object) (string, string) {
	for _, k := range []string{annInjectCA, annInjectCAFromSecret} {
		if v := m.GetAnnotations()[k]; v != "" {
			return k, v
		}
	}
	return "", ""
}

// injectCA writes caBundle into annotated CRDs' conversion webhooks and webhook configurations,
// as cainjector does. A CRD is looked at again only when its resourceVersion changed.
func (k *kubelet) injectCA(ctx context.Context) error {
	// The cache's own objects, not copies: copying every CRD (their schemas are large) each
	// second was a good part of the harness's CPU. Nothing here writes to them; a patch goes
	// through a copy.
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := k.r.List(ctx, crds, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		key, from := injection(crd)
		id := "crd/" + crd.Name
		if key == "" || k.injected[id] == crd.ResourceVersion {
			continue
		}
		ca, err := k.caFor(ctx, key, from)
		if err != nil || ca == nil {
			continue
		}
		if crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
			k.injected[id] = crd.ResourceVersion
			continue
		}
		if bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, ca) {
			k.injected[id] = crd.ResourceVersion
			continue
		}
		patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": ca}}}}}
		if err := k.mergePatch(ctx, crd.DeepCopy(), patch); err != nil {
			k.logf("injecting the CA into CRD %s: %v", crd.Name, err)
			continue
		}
		k.logf("injected the CA of %s (%s) into %s", from, caFingerprint(ca), id)
		k.injected[id] = crd.ResourceVersion
	}
	// Webhook configurations are read from the API server itself, not the informers: a stale
	// informer view once showed a re-created configuration as already injected for minutes
	// (every admission call failing "certificate signed by unknown authority" until the watch
	// restarted). Each second lists their metadata only (the full lists, every caBundle in them,
	// were most of an idle management cluster's requests) and reads in full the ones annotated
	// for injection that changed since they were injected.
	for _, wk := range []struct {
		kind, prefix string
		obj          func() client.Object
	}{
		{"ValidatingWebhookConfiguration", "vwc/", func() client.Object { return &admissionv1.ValidatingWebhookConfiguration{} }},
		{"MutatingWebhookConfiguration", "mwc/", func() client.Object { return &admissionv1.MutatingWebhookConfiguration{} }},
	} {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind(wk.kind + "List"))
		if err := k.c.Client.List(ctx, l); err != nil {
			return err
		}
		for i := range l.Items {
			m := &l.Items[i]
			id := wk.prefix + m.Name
			if key, _ := injection(m); key == "" || k.injected[id] == m.ResourceVersion {
				continue
			}
			w := wk.obj()
			if err := k.c.Client.Get(ctx, client.ObjectKey{Name: m.Name}, w); err != nil {
				if client.IgnoreNotFound(err) != nil {
					k.logf("reading %s %s: %v", wk.kind, m.Name, err)
				}
				continue
			}
			configs := webhookClientConfigs(w)
			var bundles [][]byte
			for _, c := range configs {
				bundles = append(bundles, c.CABundle)
			}
			k.injectHooks(ctx, w, id, bundles, func(ca []byte) {
				for _, c := range configs {
					c.CABundle = ca
				}
			})
		}
	}
	return nil
}

// webhookClientConfigs are the client configurations of a webhook configuration's webhooks.
func webhookClientConfigs(obj client.Object) []*admissionv1.WebhookClientConfig {
	var out []*admissionv1.WebhookClientConfig
	switch w := obj.(type) {
	case *admissionv1.ValidatingWebhookConfiguration:
		for j := range w.Webhooks {
			out = append(out, &w.Webhooks[j].ClientConfig)
		}
	case *admissionv1.MutatingWebhookConfiguration:
		for j := range w.Webhooks {
			out = append(out, &w.Webhooks[j].ClientConfig)
		}
	}
	return out
}

func (k *kubelet) injectHooks(ctx context.Context, obj client.Object, id string, bundles [][]byte, set func([]byte)) {
	key, from := injection(obj)
	if key == "" || k.injected[id] == obj.GetResourceVersion() {
		return
	}
	ca, err := k.caFor(ctx, key, from)
	if err != nil || ca == nil {
		return
	}
	same := true
	for _, b := range bundles {
		same = same && bytes.Equal(b, ca)
	}
	if !same {
		set(ca)
		if err := k.c.Client.Update(ctx, obj); err != nil {
			k.logf("injecting the CA into %s: %v", id, err)
			return
		}
		k.logf("injected the CA of %s (%s) into %s at resourceVersion %s", from, caFingerprint(ca), id, obj.GetResourceVersion())
	}
	k.injected[id] = obj.GetResourceVersion()
}

// caFingerprint names a CA bundle in the log: the first bytes of its SHA-256.
func caFingerprint(ca []byte) string {
	sum := sha256.Sum256(ca)
	return "sha256:" + hex.EncodeToString(sum[:6])
}

func (k *kubelet) mergePatch(ctx context.Context, obj client.Object, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return k.c.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}
