// Package installtest stands in, in tests, for what a real management cluster runs and envtest
// does not: kube-controller-manager (Deployment status, namespace finalization), kubelets (ready
// pods behind Services) and cert-manager's cainjector (caBundle). Tests of init and upgrade run it
// beside the code under test so that waits have something to wait for.
package installtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FakeCABundle is the caBundle the stand-in cainjector writes: a real self-signed CA certificate
// (the API server checks that a caBundle parses), base64-encoded as the API wants it.
var FakeCABundle = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "installtest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()

const (
	injectAnnotation = "cert-manager.io/inject-ca-from"
	injectedLabel    = "installtest.capctl.io/ca-injected"
)

// Controllers is a running stand-in; Stop ends it.
type Controllers struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	// Namespaces to finalize when they are Terminating (nil: every Terminating namespace).
	finalize map[string]bool
	noReady  bool
}

// Options select what the stand-in does.
type Options struct {
	// Interval between passes (default 200 ms).
	Interval time.Duration
	// FinalizeNamespaces limits namespace finalization to these names (default: all).
	FinalizeNamespaces []string
	// NotReady leaves Deployments, endpoints and CA bundles alone (only namespaces are finalized):
	// for tests of waits that must time out.
	NotReady bool
	// OnError receives the errors of passes (default: ignored; the next pass retries).
	OnError func(error)
}

// Start runs the stand-in until Stop or ctx ends.
func Start(ctx context.Context, c client.Client, opts Options) *Controllers {
	if opts.Interval == 0 {
		opts.Interval = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	ctl := &Controllers{cancel: cancel, done: make(chan struct{}), noReady: opts.NotReady}
	if len(opts.FinalizeNamespaces) > 0 {
		ctl.finalize = map[string]bool{}
		for _, n := range opts.FinalizeNamespaces {
			ctl.finalize[n] = true
		}
	}
	go func() {
		defer close(ctl.done)
		for {
			if err := ctl.Pass(ctx, c); err != nil && opts.OnError != nil && ctx.Err() == nil {
				opts.OnError(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(opts.Interval):
			}
		}
	}()
	return ctl
}

// Stop ends the stand-in and waits for it.
func (ctl *Controllers) Stop() {
	ctl.cancel()
	<-ctl.done
}

// Pass does one round of everything; errors are returned but the loop ignores them.
func (ctl *Controllers) Pass(ctx context.Context, c client.Client) error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil && ctx.Err() == nil {
			first = err
		}
	}
	keep(ctl.finalizeNamespaces(ctx, c))
	if !ctl.noReady {
		keep(MarkDeploymentsAvailable(ctx, c))
		keep(ServeWebhookEndpoints(ctx, c))
		keep(InjectCABundles(ctx, c))
	}
	return first
}

func (ctl *Controllers) finalizeNamespaces(ctx context.Context, c client.Client) error {
	list := &corev1.NamespaceList{}
	if err := c.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		ns := &list.Items[i]
		if ns.DeletionTimestamp == nil || (ctl.finalize != nil && !ctl.finalize[ns.Name]) {
			continue
		}
		if err := FinalizeNamespace(ctx, c, ns.Name); err != nil {
			return err
		}
	}
	return nil
}

// FinalizeNamespace does what the namespace controller does at the end of a deletion: clears the
// kubernetes finalizer so the Namespace goes away.
func FinalizeNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ns.Spec.Finalizers = nil
	if err := c.SubResource("finalize").Update(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	return nil
}

// MarkDeploymentsAvailable writes an Available status on every Deployment that lacks one.
func MarkDeploymentsAvailable(ctx context.Context, c client.Client) error {
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		d := &list.Items[i]
		if isAvailable(d) {
			continue
		}
		if err := SetDeploymentAvailable(ctx, c, d); err != nil {
			return err
		}
	}
	return nil
}

func isAvailable(d *appsv1.Deployment) bool {
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// SetDeploymentAvailable writes the status a Deployment controller writes once all replicas are
// available.
func SetDeploymentAvailable(ctx context.Context, c client.Client, d *appsv1.Deployment) error {
	n := ptr.Deref(d.Spec.Replicas, 1)
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed.", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
	if err := c.Status().Update(ctx, d); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing status of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// ServeWebhookEndpoints gives every Service that a webhook configuration points at an
// EndpointSlice with one ready endpoint, as kube-controller-manager does once pods are ready.
func ServeWebhookEndpoints(ctx context.Context, c client.Client) error {
	services := map[types.NamespacedName]bool{}
	for _, kind := range []string{"ValidatingWebhookConfigurationList", "MutatingWebhookConfigurationList"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("admissionregistration.k8s.io/v1")
		list.SetKind(kind)
		if err := c.List(ctx, list); err != nil {
			return err
		}
		for _, u := range list.Items {
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				ns, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "namespace")
				name, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "name")
				if ns != "" && name != "" {
					services[types.NamespacedName{Namespace: ns, Name: name}] = true
				}
			}
		}
	}
	// Provider webhook Services also serve CRD conversion; they carry the clusterctl label.
	svcs := &corev1.ServiceList{}
	if err := c.List(ctx, svcs, client.HasLabels{"clusterctl.cluster.x-k8s.io"}); err != nil {
		return err
	}
	for _, s := range svcs.Items {
		services[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = true
	}
	for key := range services {
		if err := ServeEndpoint(ctx, c, key.Namespace, key.Name); err != nil {
			return err
		}
	}
	return nil
}

// ServeEndpoint creates a ready EndpointSlice for the Service when it has none.
func ServeEndpoint(ctx context.Context, c client.Client, namespace, service string) error {
	slices := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return err
	}
	if len(slices.Items) > 0 {
		return nil
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: service + "-installtest", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(9443)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := c.Create(ctx, es); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
		if apierrors.IsForbidden(err) { // namespace terminating
			return nil
		}
		return fmt.Errorf("creating EndpointSlice for Service %s/%s: %w", namespace, service, err)
	}
	return nil
}

// InjectCABundles writes a caBundle into every webhook configuration and CRD that carries
// cert-manager's inject-ca-from annotation and has none yet.
func InjectCABundles(ctx context.Context, c client.Client) error {
	for _, kind := range []string{"ValidatingWebhookConfigurationList", "MutatingWebhookConfigurationList"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("admissionregistration.k8s.io/v1")
		list.SetKind(kind)
		if err := c.List(ctx, list); err != nil {
			return err
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetAnnotations()[injectAnnotation] == "" && u.GetAnnotations()[injectAnnotation+"-secret"] == "" {
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			changed := false
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				if b, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle"); b == "" {
					_ = unstructured.SetNestedField(hm, FakeCABundle, "clientConfig", "caBundle")
					changed = true
				}
			}
			if !changed {
				continue
			}
			_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
			if err := c.Update(ctx, u, client.FieldOwner("cainjector")); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("injecting CA into %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := c.List(ctx, crds); err != nil {
		return err
	}
	for _, m := range crds.Items {
		if m.Annotations[injectAnnotation] == "" || m.Labels[injectedLabel] != "" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: m.Name}, crd); err != nil {
			continue
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		// The label spares later passes from reading the (large) CRD again.
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}},"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, injectedLabel, FakeCABundle))
		if len(conv.Webhook.ClientConfig.CABundle) > 0 {
			patch = []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, injectedLabel))
		}
		if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("cainjector")); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("injecting CA into CRD %s: %w", m.Name, err)
		}
	}
	return nil
}

// Proxy is a TCP proxy in front of an API server that a test can cut off and restore, to play
// "the API server went away mid-install" without losing the server's state.
type Proxy struct {
	Addr   string // host:port to dial instead of the server
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

// NewProxy listens on a free loopback port and forwards to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	return p, nil
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// Cut closes the listener and every open connection: clients get "connection refused".
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Restore listens again on the same address.
func (p *Proxy) Restore() error {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// ParseYAML splits a multi-document YAML stream into objects (empty documents skipped).
func ParseYAML(data []byte) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, unstructured.Unstructured{Object: m})
	}
}

// ReadYAML reads and parses a YAML file.
func ReadYAML(path string) ([]unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := ParseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}
