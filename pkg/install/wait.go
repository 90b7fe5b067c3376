package install

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
)

// cert-manager's cainjector annotations: from a Certificate (`<namespace>/<certificate>`), used by
// providers, or from a Secret (`<namespace>/<secret>`), used by cert-manager's own webhook.
const (
	InjectCAAnnotation           = "cert-manager.io/inject-ca-from"
	InjectCAFromSecretAnnotation = "cert-manager.io/inject-ca-from-secret"
)

// injectionSource returns the annotation that asks for CA injection, and its value.
func injectionSource(u *unstructured.Unstructured) (string, string) {
	for _, k := range []string{InjectCAAnnotation, InjectCAFromSecretAnnotation} {
		if v := u.GetAnnotations()[k]; v != "" {
			return k, v
		}
	}
	return "", ""
}

// progressEvery is how often a long wait reports what it still waits for.
const progressEvery = 15 * time.Second

// Defaults of WaitOptions.
const (
	DefaultWaitTimeout  = 5 * time.Minute
	DefaultWaitInterval = time.Second
)

// WaitOptions tune Wait.
type WaitOptions struct {
	// Timeout bounds the whole wait (default 5 min).
	Timeout time.Duration
	// Interval between checks (default 1 s).
	Interval time.Duration
	// SkipWebhooks waits for Deployments only (clusterctl's behaviour).
	SkipWebhooks bool
	// Source names the set for messages ("cluster-api v1.14.0").
	Source string
	// Log receives progress lines. Nil discards.
	Log *logging.Logger
}

// Check is the state of one thing Wait waits for.
type Check struct {
	Object ObjectRef `json:"object"`
	// What is waited for: "available", "endpoints" or "ca-injected".
	What   string `json:"what"`
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"` // why it is not ready
	// Err is the failed read when the state could not be read at all (Ready is then false
	// without the object being known unready: a read command says "not checked").
	Err error `json:"-"`
}

func (c Check) String() string {
	if c.Ready {
		return c.Object.String() + ": ready"
	}
	return c.Reason
}

// TimeoutError is returned when Wait runs out of time; Reasons say what is still not ready, and why.
type TimeoutError struct {
	Source  string
	Timeout time.Duration
	Pending []Check
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	src := ""
	if e.Source != "" {
		src = e.Source + " "
	}
	fmt.Fprintf(&b, "%snot ready after %s:", src, e.Timeout)
	for _, c := range e.Pending {
		b.WriteString("\n  - ")
		b.WriteString(c.Reason)
	}
	return b.String()
}

// Reasons are the pending checks' reasons.
func (e *TimeoutError) Reasons() []string {
	out := make([]string, len(e.Pending))
	for i, c := range e.Pending {
		out[i] = c.Reason
	}
	return out
}

// target is one thing to check, taken from the objects.
type target struct {
	ref  ObjectRef
	what string
	// for endpoints: the webhook configurations/CRDs that use the service
	users []string
}

// targets lists what objs need to be usable.
func targets(objs []unstructured.Unstructured, skipWebhooks bool) []target {
	var out []target
	services := map[ObjectRef]*target{}
	var svcOrder []ObjectRef
	addService := func(ns, name, user string) {
		if ns == "" || name == "" {
			return
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
		t, ok := services[ref]
		if !ok {
			t = &target{ref: ref, what: "endpoints"}
			services[ref] = t
			svcOrder = append(svcOrder, ref)
		}
		for _, u := range t.users {
			if u == user {
				return
			}
		}
		t.users = append(t.users, user)
	}
	var injections []target
	for i := range objs {
		u := &objs[i]
		ref := RefOf(u)
		switch {
		case ref.Kind == "Deployment" && u.GroupVersionKind().Group == "apps":
			out = append(out, target{ref: ref, what: "available"})
		case skipWebhooks:
		case (ref.Kind == "ValidatingWebhookConfiguration" || ref.Kind == "MutatingWebhookConfiguration") && u.GroupVersionKind().Group == "admissionregistration.k8s.io":
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				hm, ok := h.(map[string]any)
				if !ok {
					continue
				}
				ns, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "namespace")
				name, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "name")
				addService(ns, name, ref.String())
			}
			if k, _ := injectionSource(u); k != "" {
				injections = append(injections, target{ref: ref, what: "ca-injected"})
			}
		case isCRD(u):
			strategy, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy")
			if strategy != "Webhook" {
				continue
			}
			ns, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
			name, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
			addService(ns, name, ref.String())
			if k, _ := injectionSource(u); k != "" {
				injections = append(injections, target{ref: ref, what: "ca-injected"})
			}
		}
	}
	for _, r := range svcOrder {
		out = append(out, *services[r])
	}
	return append(out, injections...)
}

// Diagnose checks, once, everything objs need to be usable and says why each part is not.
func Diagnose(ctx context.Context, c client.Client, objs []unstructured.Unstructured, skipWebhooks bool) []Check {
	ts := targets(objs, skipWebhooks)
	out := make([]Check, 0, len(ts))
	for _, t := range ts {
		out = append(out, check(ctx, c, t))
	}
	return out
}

func check(ctx context.Context, c client.Client, t target) Check {
	ch := Check{Object: t.ref, What: t.what}
	var err error
	switch t.what {
	case "available":
		ch.Ready, ch.Reason, err = checkDeployment(ctx, c, t.ref)
	case "endpoints":
		ch.Ready, ch.Reason, err = checkEndpoints(ctx, c, t)
	case "ca-injected":
		ch.Ready, ch.Reason, err = checkCAInjected(ctx, c, t.ref)
	}
	if err != nil {
		ch.Ready, ch.Err = false, err
		ch.Reason = fmt.Sprintf("%s: cannot be read: %v", t.ref, err)
	}
	return ch
}

func checkDeployment(ctx context.Context, c client.Client, ref ObjectRef) (bool, string, error) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Deployment %s/%s does not exist", ref.Namespace, ref.Name), nil
		}
		return false, "", err
	}
	var notes []string
	for _, cond := range d.Status.Conditions {
		switch {
		case cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue:
			return true, "", nil
		case cond.Type == appsv1.DeploymentAvailable:
			notes = append(notes, fmt.Sprintf("Available=%s %s: %s", cond.Status, cond.Reason, cond.Message))
		case cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue:
			notes = append(notes, fmt.Sprintf("ReplicaFailure %s: %s", cond.Reason, cond.Message))
		case cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse:
			notes = append(notes, fmt.Sprintf("Progressing=False %s: %s", cond.Reason, cond.Message))
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	reason := fmt.Sprintf("Deployment %s/%s not available (%d of %d replicas available)", d.Namespace, d.Name, d.Status.AvailableReplicas, want)
	if len(notes) > 0 {
		reason += "; " + strings.Join(notes, "; ")
	}
	pods, err := podProblems(ctx, c, d)
	if err != nil {
		return false, reason + fmt.Sprintf("; pods cannot be listed: %v", err), nil
	}
	return false, reason + "; " + pods, nil
}

// podProblems describes the Deployment's pods that are not ready.
func podProblems(ctx context.Context, c client.Client, d *appsv1.Deployment) (string, error) {
	if d.Spec.Selector == nil {
		return "it has no selector", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", err
	}
	if len(pods.Items) == 0 {
		return "no pods exist for it: check that kube-controller-manager runs and that nothing (quota, admission) blocks the ReplicaSet", nil
	}
	var parts []string
	for _, p := range pods.Items {
		if why := podProblem(&p); why != "" {
			parts = append(parts, why)
		}
	}
	if len(parts) == 0 {
		return "all its pods are ready; waiting for minReadySeconds or the Deployment status to catch up", nil
	}
	sort.Strings(parts)
	return strings.Join(parts, "; "), nil
}

func podProblem(p *corev1.Pod) string {
	name := "pod " + p.Name
	if p.DeletionTimestamp != nil {
		return name + " is terminating"
	}
	if p.Status.Phase == corev1.PodPending {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return fmt.Sprintf("%s Pending, not scheduled (%s): %s", name, cond.Reason, cond.Message)
			}
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing" && cs.State.Waiting.Reason != "ContainerCreating":
			msg := fmt.Sprintf("%s container %s waiting: %s", name, cs.Name, cs.State.Waiting.Reason)
			if cs.State.Waiting.Message != "" {
				msg += ": " + cs.State.Waiting.Message
			}
			if cs.RestartCount > 0 {
				msg += fmt.Sprintf(" (restarted %d times)", cs.RestartCount)
			}
			return msg
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			return fmt.Sprintf("%s container %s terminated: %s (exit code %d) %s", name, cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
		case cs.State.Running != nil && !cs.Ready:
			return fmt.Sprintf("%s container %s is running but not ready (readiness probe failing)", name, cs.Name)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return ""
		}
	}
	return fmt.Sprintf("%s is %s and not ready", name, p.Status.Phase)
}

func checkEndpoints(ctx context.Context, c client.Client, t target) (bool, string, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, slices, client.InNamespace(t.ref.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: t.ref.Name}); err != nil {
		return false, "", err
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true, "", nil
			}
		}
	}
	svc := &corev1.Service{}
	reason := fmt.Sprintf("webhook Service %s/%s has no ready endpoints (used by %s): calls to the webhook would fail; its pods are not ready", t.ref.Namespace, t.ref.Name, strings.Join(t.users, ", "))
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.ref.Namespace, Name: t.ref.Name}, svc); apierrors.IsNotFound(err) {
		reason = fmt.Sprintf("webhook Service %s/%s does not exist (used by %s)", t.ref.Namespace, t.ref.Name, strings.Join(t.users, ", "))
	} else if err == nil && len(svc.Spec.Selector) > 0 {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(svc.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(svc.Spec.Selector)}); err == nil && len(pods.Items) == 0 {
			reason += " (no pod matches its selector " + labels.SelectorFromSet(svc.Spec.Selector).String() + ")"
		}
	}
	return false, reason, nil
}

func checkCAInjected(ctx context.Context, c client.Client, ref ObjectRef) (bool, string, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return false, ref.String() + " does not exist", nil
		}
		return false, "", err
	}
	key, from := injectionSource(u)
	missing := 0
	if isCRD(u) {
		if b, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); b == "" {
			missing++
		}
	} else {
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			if b, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle"); b == "" {
				missing++
			}
		}
	}
	if missing == 0 {
		return true, "", nil
	}
	reason := fmt.Sprintf("CA not injected into %s (%s: %s): cert-manager's cainjector has not written caBundle", ref, key, from)
	if ns, name, ok := strings.Cut(from, "/"); ok && key == InjectCAAnnotation {
		reason += certificateState(ctx, c, ns, name)
	}
	return false, reason, nil
}

// certificateState adds the Ready condition of the cert-manager Certificate a CA comes from.
func certificateState(ctx context.Context, c client.Client, ns, name string) string {
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("; Certificate %s/%s does not exist", ns, name)
		}
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
	for _, cd := range conds {
		m, _ := cd.(map[string]any)
		if m["type"] == "Ready" {
			return fmt.Sprintf("; Certificate %s/%s Ready=%v: %v", ns, name, m["status"], m["message"])
		}
	}
	return fmt.Sprintf("; Certificate %s/%s has no Ready condition yet (is cert-manager running?)", ns, name)
}

// Wait waits until everything objs need is usable (see the package documentation), or returns a
// *TimeoutError that says why not.
func Wait(ctx context.Context, c client.Client, objs []unstructured.Unstructured, opts WaitOptions) error {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultWaitTimeout
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultWaitInterval
	}
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	ts := targets(objs, opts.SkipWebhooks)
	if len(ts) == 0 {
		return nil
	}
	deadline := time.Now().Add(opts.Timeout)
	pending := ts
	var last []Check
	nextReport := time.Now().Add(progressEvery)
	err := cluster.Poll(ctx, opts.Interval, opts.Timeout, func(ctx context.Context) (bool, error) {
		var still []target
		last = last[:0]
		for _, t := range pending {
			ch := check(ctx, c, t)
			if ch.Ready {
				log.V(1).Info("Ready", "object", t.ref.String(), "check", t.what)
				continue
			}
			still = append(still, t)
			last = append(last, ch)
		}
		pending = still
		if len(pending) == 0 {
			return true, nil
		}
		if time.Now().After(nextReport) {
			nextReport = time.Now().Add(progressEvery)
			log.Info("Still waiting", "ready", len(ts)-len(pending), "of", len(ts), "next", last[0].Reason,
				"timeLeft", time.Until(deadline).Round(time.Second).String())
		}
		return false, nil
	})
	if errors.Is(err, cluster.ErrTimedOut) {
		return &TimeoutError{Source: opts.Source, Timeout: opts.Timeout, Pending: append([]Check(nil), last...)}
	}
	return err
}

// Summary describes what Wait would wait for: "1 Deployment, 1 webhook Service, 4 CA injections".
func Summary(objs []unstructured.Unstructured, skipWebhooks bool) string {
	counts := map[string]int{}
	for _, t := range targets(objs, skipWebhooks) {
		counts[t.what]++
	}
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(counts["available"], "Deployment", "Deployments")
	add(counts["endpoints"], "webhook Service", "webhook Services")
	add(counts["ca-injected"], "CA injection", "CA injections")
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// CheckWaitProviderTimeout is the one rule of --wait-provider-timeout (init and upgrade apply):
// a positive number of seconds.
func CheckWaitProviderTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--wait-provider-timeout must be a positive number of seconds, not %d", int(d.Seconds()))
	}
	return nil
}
