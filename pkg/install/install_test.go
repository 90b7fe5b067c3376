package install_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/install"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func needEnv(t *testing.T) *cluster.Client {
	t.Helper()
	testenv.Integration(t)
	// A fresh client per test: its mapper starts empty, as in a capctl run.
	c, err := cluster.NewForConfig(env.Config, cluster.Options{}, env.Kubeconfig, "envtest", "default")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func load(t *testing.T, name string) []unstructured.Unstructured {
	t.Helper()
	objs, err := installtest.ReadYAML("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renamed gives the widgets set its own namespace (and CRD group) so tests stay independent.
func renamed(t *testing.T, ns string) []unstructured.Unstructured {
	objs := load(t, "widgets.yaml")
	for i := range objs {
		u := &objs[i]
		if u.GetKind() == "Namespace" {
			u.SetName(ns)
		} else if u.GetNamespace() != "" {
			u.SetNamespace(ns)
		}
		if a := u.GetAnnotations()[install.InjectCAAnnotation]; a != "" {
			u.SetAnnotations(map[string]string{install.InjectCAAnnotation: ns + "/widgets-serving-cert"})
		}
		if u.GetKind() == "ValidatingWebhookConfiguration" {
			u.SetName(ns + "-validating")
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				_ = unstructured.SetNestedField(h.(map[string]any), ns, "clientConfig", "service", "namespace")
			}
			_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
		}
	}
	return objs
}

func TestApplyInstallsCRDsFirstAndIsIdempotent(t *testing.T) {
	c := needEnv(t)
	ctx := testenv.Context(t)
	objs := renamed(t, "apply-test")
	// Prime the mapper's discovery before the CRD exists, so the test proves it learns the new kind.
	widget := schema.GroupKind{Group: "example.capctl.io", Kind: "Widget"}
	if _, err := c.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Fatal(err)
	}
	crdExisted := true
	if _, err := c.Mapper.RESTMapping(widget, "v1"); meta.IsNoMatchError(err) {
		crdExisted = false
	}

	var progress []string
	res, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml", OnApplied: func(r install.ObjectRef, done, total int) {
		progress = append(progress, fmt.Sprintf("%d/%d %s", done, total, r))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != len(objs) || res.CRDs != 1 {
		t.Fatalf("applied %d of %d, crds %d", len(res.Applied), len(objs), res.CRDs)
	}
	// Levels: Namespace; then the CRD with the objects of kinds the server serves (concurrently,
	// any order); the Widget once its CRD is Established; webhook configurations last; progress
	// counts up by one.
	at := func(what string) int {
		for i, p := range progress {
			if strings.Contains(p, what) {
				return i
			}
		}
		return -1
	}
	if len(progress) != len(objs) || !strings.Contains(progress[0], "Namespace apply-test") ||
		!strings.Contains(progress[len(progress)-1], "ValidatingWebhookConfiguration") ||
		at("CustomResourceDefinition") < 1 || at("Widget apply-test/default-widget") < at("CustomResourceDefinition") {
		t.Errorf("order: %v", progress)
	}
	for i, p := range progress {
		if !strings.HasPrefix(p, fmt.Sprintf("%d/%d ", i+1, len(objs))) {
			t.Errorf("progress %d: %s", i, p)
		}
	}
	if crdExisted {
		t.Fatal("test setup: the Widget kind was known before its CRD was applied")
	}
	// The same client (whose mapper had answered no-match for Widget) applied the Widget above.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "widgets.example.capctl.io"}, crd); err != nil {
		t.Fatal(err)
	}
	established := false
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	if !established {
		t.Error("CRD not established")
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widget.WithVersion("v1"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "default-widget"}, w); err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, mf := range w.GetManagedFields() {
		managers[mf.Manager+"/"+string(mf.Operation)] = true
	}
	if !managers["capctl/Apply"] {
		t.Errorf("managed fields: %v", managers)
	}
	// Another manager owns a field; capctl takes it back (force), and a second apply converges.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "widgets-controller-manager"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "someone/else:v9"
	if err := c.Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml"}); err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "registry.example/widgets-controller:v0.1.0" {
		t.Errorf("image after re-apply: %s", got)
	}
	// Without force the conflict is reported.
	d.Spec.Template.Spec.Containers[0].Image = "someone/else:v9"
	if err := c.Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	_, err = install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml", NoForce: true})
	if err == nil || !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Errorf("no-force apply over a conflict: %v", err)
	}
}

func TestApplyUnknownKindNamesKindAndFile(t *testing.T) {
	c := needEnv(t)
	ctx := testenv.Context(t)
	_, err := install.Apply(ctx, c, load(t, "unknown-kind.yaml"), install.ApplyOptions{Source: "testdata/unknown-kind.yaml"})
	var uk *install.UnknownKindError
	if !errors.As(err, &uk) {
		t.Fatalf("want UnknownKindError, got %v", err)
	}
	for _, want := range []string{`"Gizmo"`, "testdata/unknown-kind.yaml", "gizmo-system/my-gizmo", "example.capctl.io/v1", "nothing was applied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// Checked before any write: the namespace of the same file was not created.
	if err := c.Get(ctx, client.ObjectKey{Name: "gizmo-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace was created despite the bad kind: %v", err)
	}
}

func TestApplyDryRunPersistsNothing(t *testing.T) {
	c := needEnv(t)
	ctx := testenv.Context(t)
	objs := renamed(t, "dry-run-test")
	// A distinct CRD so the dry run meets a kind the server does not know yet.
	for i := range objs {
		u := &objs[i]
		if u.GetKind() == "CustomResourceDefinition" {
			u.SetName("drywidgets.dry.capctl.io")
			_ = unstructured.SetNestedField(u.Object, "dry.capctl.io", "spec", "group")
			_ = unstructured.SetNestedField(u.Object, "drywidgets", "spec", "names", "plural")
			_ = unstructured.SetNestedField(u.Object, "drywidget", "spec", "names", "singular")
			_ = unstructured.SetNestedField(u.Object, "DryWidget", "spec", "names", "kind")
			_ = unstructured.SetNestedField(u.Object, "DryWidgetList", "spec", "names", "listKind")
		}
		if u.GetKind() == "Widget" {
			u.SetAPIVersion("dry.capctl.io/v1")
			u.SetKind("DryWidget")
		}
	}
	res, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != len(objs) {
		t.Errorf("dry run covered %d of %d", len(res.Applied), len(objs))
	}
	// Objects in the new namespace and of the new kind could not be checked by the server.
	if len(res.Unchecked) == 0 {
		t.Error("no unchecked objects reported")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "dry-run-test"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run created the namespace: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "drywidgets.dry.capctl.io"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run created the CRD: %v", err)
	}
}

func TestApplyServerGoneMidwayThenRerunCompletes(t *testing.T) {
	needEnv(t)
	ctx := testenv.Context(t)
	c, proxy := viaProxy(t)
	objs := renamed(t, "gone-test")
	// One at a time, so exactly which objects were applied is known.
	_, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml", Concurrency: 1, OnApplied: func(r install.ObjectRef, done, total int) {
		if done == 3 {
			proxy.Cut()
		}
	}})
	var ae *install.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("want ApplyError, got %v", err)
	}
	if len(ae.Applied) != 3 || len(ae.Pending) != len(objs)-3 {
		t.Errorf("applied %d pending %d", len(ae.Applied), len(ae.Pending))
	}
	msg := err.Error()
	// Objects of kinds the server serves go before those of the set's own CRD kinds (which wait
	// for the CRD to be Established): Namespace, CRD, ServiceAccount, then the Deployment fails.
	for _, want := range []string{"3 of 7 objects were applied", "1 Namespace, 1 CustomResourceDefinition, 1 ServiceAccount", "applying Deployment gone-test/widgets-controller-manager"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	res, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml"})
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if len(res.Applied) != len(objs) {
		t.Errorf("re-run applied %d", len(res.Applied))
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "gone-test", Name: "widgets-controller-manager"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("re-run did not complete: %v", err)
	}
}

// With the default concurrency a failure part-way reports exactly what the cluster holds: every
// object listed as applied is there, applied and pending together are the whole set, and the
// failed object is among the pending.
func TestApplyConcurrentFailureReportsWhatWasApplied(t *testing.T) {
	needEnv(t)
	ctx := testenv.Context(t)
	c, proxy := viaProxy(t)
	objs := renamed(t, "concurrent-gone")
	_, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml", RetryTimeout: time.Second, OnApplied: func(r install.ObjectRef, done, total int) {
		if done == 3 {
			proxy.Cut()
		}
	}})
	var ae *install.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("want ApplyError, got %v", err)
	}
	if len(ae.Applied) < 3 || len(ae.Pending) == 0 || len(ae.Applied)+len(ae.Pending) != len(objs) {
		t.Fatalf("applied %v pending %v", ae.Applied, ae.Pending)
	}
	// In the set's order: the Namespace (a level of its own) first, the Widget (which waits for
	// its CRD) never before its CRD.
	if ae.Applied[0].Kind != "Namespace" {
		t.Errorf("applied (in the set's order) should start with the Namespace: %v", ae.Applied)
	}
	if containsKind(ae.Applied, "Widget") && !containsKind(ae.Applied, "CustomResourceDefinition") {
		t.Errorf("the Widget is applied but not its CRD: %v", ae.Applied)
	}
	if ae.Object.Kind == "" || !containsRef(ae.Pending, ae.Object) || containsRef(ae.Applied, ae.Object) {
		t.Errorf("failed object %v should be pending: applied %v pending %v", ae.Object, ae.Applied, ae.Pending)
	}
	if want := fmt.Sprintf("%d of %d objects were applied", len(ae.Applied), len(objs)); !strings.Contains(err.Error(), want) {
		t.Errorf("error lacks %q: %v", want, err)
	}
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	direct := needEnv(t)
	for _, r := range ae.Applied {
		o := r.Object()
		if err := direct.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, &o); err != nil {
			t.Errorf("%s is reported applied but: %v", r, err)
		}
	}
	res, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml"})
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if len(res.Applied) != len(objs) {
		t.Errorf("re-run applied %d", len(res.Applied))
	}
}

// viaProxy is a client reaching the test API server through a proxy the test can cut.
func viaProxy(t *testing.T) (*cluster.Client, *installtest.Proxy) {
	t.Helper()
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := installtest.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Cut)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + proxy.Addr
	cfg.TLSClientConfig.ServerName = u.Hostname()
	c, err := cluster.NewForConfig(cfg, cluster.Options{}, "", "via-proxy", "default")
	if err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

func containsKind(refs []install.ObjectRef, kind string) bool {
	for _, x := range refs {
		if x.Kind == kind {
			return true
		}
	}
	return false
}

func containsRef(refs []install.ObjectRef, r install.ObjectRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

func TestWaitExplainsWhyAndSucceedsWhenReady(t *testing.T) {
	c := needEnv(t)
	ctx := testenv.Context(t)
	objs := renamed(t, "wait-test")
	if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "widgets.yaml"}); err != nil {
		t.Fatal(err)
	}
	if got := install.Summary(objs, false); got != "1 Deployment, 1 webhook Service, 1 CA injection" {
		t.Errorf("summary: %s", got)
	}
	err := install.Wait(ctx, c, objs, install.WaitOptions{Timeout: 300 * time.Millisecond, Interval: 100 * time.Millisecond, Source: "widgets v0.1.0"})
	var te *install.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want TimeoutError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"widgets v0.1.0 not ready after 300ms",
		"Deployment wait-test/widgets-controller-manager not available (0 of 1 replicas available)",
		"no pods exist for it",
		"webhook Service wait-test/widgets-webhook-service has no ready endpoints (used by ValidatingWebhookConfiguration wait-test-validating)",
		"CA not injected into ValidatingWebhookConfiguration wait-test-validating (cert-manager.io/inject-ca-from: wait-test/widgets-serving-cert)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("timeout message lacks %q:\n%s", want, msg)
		}
	}

	// A pod that cannot be scheduled, and one whose image cannot be pulled: the reasons name them.
	for _, p := range []struct {
		name   string
		status corev1.PodStatus
	}{
		{"pending", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 node(s) had untolerated taint"}}}},
		{"pull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/widgets-controller:v0.1.0"`}}}}}},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "wait-test", Name: "widgets-" + p.name, Labels: map[string]string{"app": "widgets"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example/widgets-controller:v0.1.0"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = p.status
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	err = install.Wait(ctx, c, objs, install.WaitOptions{Timeout: 200 * time.Millisecond, Interval: 100 * time.Millisecond, SkipWebhooks: true})
	msg = fmt.Sprint(err)
	for _, want := range []string{
		"pod widgets-pending Pending, not scheduled (Unschedulable): 0/3 nodes are available",
		`pod widgets-pull container manager waiting: ImagePullBackOff: Back-off pulling image`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("timeout message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "webhook") {
		t.Errorf("SkipWebhooks still waited for webhooks: %s", msg)
	}

	// Once the stand-in controllers made everything ready, Wait returns.
	ctl := installtest.Start(ctx, c, installtest.Options{Interval: 100 * time.Millisecond})
	defer ctl.Stop()
	if err := install.Wait(ctx, c, objs, install.WaitOptions{Timeout: 30 * time.Second, Interval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("wait with ready objects: %v", err)
	}
}
