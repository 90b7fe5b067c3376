// Package certmanager manages the cert-manager that Cluster API providers need for their webhook
// certificates, the way clusterctl v1.14 does (clusterctl-spec §6), with clearer failures:
//
//   - Probe: clusterctl's readiness test — create Namespace cert-manager-test, a self-signed Issuer
//     and a Certificate, then delete them. Success means cert-manager's API (and its webhook, if it
//     has one) accepts objects.
//   - Ensure (used by init): skip when the probe passes; when `externallyProvisioned` is set only
//     wait for it; refuse to install over a cert-manager someone else installed (its CRDs lack
//     clusterctl's label) that does not work; otherwise apply the configured components with
//     clusterctl's labels and version annotation (server-side apply) and wait, up to the configured
//     timeout, for the probe to pass. A timeout says why: the probe's error plus what
//     install.Diagnose finds (Deployments not available, pods pending, webhook Service without
//     endpoints, CA not injected).
//   - PlanUpgrade: clusterctl's upgrade decision from the installed objects' version annotation,
//     object count and images.
package certmanager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/versions"
)

// Names, labels and annotations, as clusterctl writes them.
const (
	Namespace         = "cert-manager"
	TestNamespace     = "cert-manager-test"
	TestIssuer        = "test-selfsigned"
	TestCertificate   = "selfsigned-cert"
	CoreValue         = "cert-manager"
	VersionAnnotation = "cert-manager.clusterctl.cluster.x-k8s.io/version"
	// ImagesComponent is the `images:` selector for cert-manager's images (also the folder its
	// components are fetched from).
	ImagesComponent = repository.CertManagerName
	// CertificatesCRD is the CRD whose presence shows some cert-manager was installed.
	CertificatesCRD = "certificates.cert-manager.io"
	// DefaultInstalledVersion is what clusterctl assumes for objects without the version annotation.
	DefaultInstalledVersion = "v0.11.0"
)

// IsAPIGroup tells whether group is one of cert-manager's own API groups (its custom resources).
func IsAPIGroup(group string) bool {
	return group == "cert-manager.io" || group == "acme.cert-manager.io"
}

// Components is a fetched cert-manager release.
type Components struct {
	Version string
	// URL is where the objects came from (for messages).
	URL     string
	Objects []unstructured.Unstructured
	Images  []string
}

// Prepare adds clusterctl's labels and version annotation to every object (in place).
func Prepare(objs []unstructured.Unstructured, version string) {
	for i := range objs {
		u := &objs[i]
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[inventory.ClusterctlLabel] = ""
		l[inventory.CoreLabel] = CoreValue
		u.SetLabels(l)
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[VersionAnnotation] = version
		u.SetAnnotations(a)
	}
}

// ProbeError is a failed probe; Step says which object could not be created.
type ProbeError struct {
	Step string
	Err  error
}

func (e *ProbeError) Error() string {
	if meta.IsNoMatchError(e.Err) {
		return fmt.Sprintf("cert-manager is not installed: creating %s: the cert-manager.io/v1 kinds are not served", e.Step)
	}
	return fmt.Sprintf("cert-manager does not work: creating %s failed: %v", e.Step, e.Err)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// Probe runs clusterctl's readiness test once: it creates Namespace cert-manager-test, Issuer
// test-selfsigned and Certificate selfsigned-cert there, then deletes them again. It returns nil
// when cert-manager accepted them.
func Probe(ctx context.Context, c client.Client) error {
	// Without cert-manager's kinds the probe cannot pass: say so without creating (and deleting)
	// the namespace, whose deletion takes a while and would hold up the next probe.
	issuerGVK := schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"}
	if _, err := c.RESTMapper().RESTMapping(issuerGVK.GroupKind(), issuerGVK.Version); meta.IsNoMatchError(err) {
		return &ProbeError{Step: "Issuer " + TestNamespace + "/" + TestIssuer, Err: err}
	}
	ns := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: TestNamespace}, ns)
	switch {
	case err == nil && ns.DeletionTimestamp != nil:
		return &ProbeError{Step: "Namespace " + TestNamespace, Err: errProbeNamespaceTerminating}
	case apierrors.IsNotFound(err):
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TestNamespace}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return &ProbeError{Step: "Namespace " + TestNamespace, Err: err}
		}
	case err != nil:
		return &ProbeError{Step: "Namespace " + TestNamespace, Err: err}
	}
	issuer, cert := testObjects()
	defer cleanupProbe(c, issuer, cert)
	if err := c.Create(ctx, issuer); err != nil && !apierrors.IsAlreadyExists(err) {
		return &ProbeError{Step: "Issuer " + TestNamespace + "/" + TestIssuer, Err: err}
	}
	if err := c.Create(ctx, cert); err != nil && !apierrors.IsAlreadyExists(err) {
		return &ProbeError{Step: "Certificate " + TestNamespace + "/" + TestCertificate, Err: err}
	}
	return nil
}

// errProbeNamespaceTerminating: the probe could not run yet; it says nothing about cert-manager.
var errProbeNamespaceTerminating = errors.New("the namespace left by an earlier probe is still terminating")

func testObjects() (*unstructured.Unstructured, *unstructured.Unstructured) {
	issuer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
		"metadata": map[string]any{"name": TestIssuer, "namespace": TestNamespace},
		"spec":     map[string]any{"selfSigned": map[string]any{}},
	}}
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": TestCertificate, "namespace": TestNamespace},
		"spec": map[string]any{
			"dnsNames":   []any{"example.com"},
			"secretName": "selfsigned-cert-tls",
			"issuerRef":  map[string]any{"name": TestIssuer},
		},
	}}
	return issuer, cert
}

// cleanupProbe deletes the probe's objects (NotFound and no-match tolerated), with its own
// deadline so a cancelled run still tidies up.
func cleanupProbe(c client.Client, objs ...client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, o := range objs {
		_ = c.Delete(ctx, o)
	}
	_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TestNamespace}})
}

// Ownership says who installed the cert-manager in the cluster.
type Ownership struct {
	// Managed: objects labelled clusterctl.cluster.x-k8s.io/core=cert-manager exist in the
	// cert-manager or kube-system namespace, or on cert-manager's CRDs (clusterctl's signal).
	Managed bool
	// Foreign: cert-manager's CRDs exist without that label (installed by Helm, an operator, ...).
	Foreign bool
	// Version of the managed installation (its version annotation), if any.
	Version string
}

// Owner finds out who installed cert-manager, reading a few objects.
func Owner(ctx context.Context, c client.Client) (Ownership, error) {
	var o Ownership
	sel := client.MatchingLabels{inventory.CoreLabel: CoreValue}
	for _, ns := range []string{Namespace, "kube-system"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
		if err := c.List(ctx, list, client.InNamespace(ns), sel); err != nil {
			return o, fmt.Errorf("reading cert-manager objects in %s: %w", ns, err)
		}
		if len(list.Items) > 0 {
			o.Managed = true
			o.Version = list.Items[0].Annotations[VersionAnnotation]
		}
		deps := &metav1.PartialObjectMetadataList{}
		deps.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
		if err := c.List(ctx, deps, client.InNamespace(ns), sel); err != nil {
			return o, fmt.Errorf("reading cert-manager Deployments in %s: %w", ns, err)
		}
		if len(deps.Items) > 0 {
			o.Managed = true
			o.Version = deps.Items[0].Annotations[VersionAnnotation]
		}
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	err := c.Get(ctx, client.ObjectKey{Name: CertificatesCRD}, crd)
	switch {
	case err == nil:
		if crd.Labels[inventory.CoreLabel] == CoreValue {
			o.Managed = true
			if o.Version == "" {
				o.Version = crd.Annotations[VersionAnnotation]
			}
		} else {
			o.Foreign = true
		}
	case !apierrors.IsNotFound(err):
		return o, fmt.Errorf("reading CRD %s: %w", CertificatesCRD, err)
	}
	return o, nil
}

// Action is what Ensure did.
type Action string

const (
	ActionAlreadyWorking Action = "already-installed" // the probe passed; nothing installed
	ActionExternal       Action = "external"          // externallyProvisioned; waited for it
	ActionInstalled      Action = "installed"
	ActionWouldInstall   Action = "would-install" // dry run
	ActionWouldSkip      Action = "would-skip"    // dry run: cert-manager appears installed
)

// Options tune Ensure.
type Options struct {
	Config config.CertManager
	// Fetch returns the components to install (called only when an install is needed).
	Fetch func(ctx context.Context) (*Components, error)
	// DryRun applies nothing and creates no probe objects.
	DryRun bool
	// WaitInterval between probes while waiting (default 1 s).
	WaitInterval time.Duration
	Log          *logging.Logger
}

// Result says what Ensure did.
type Result struct {
	Action  Action   `json:"action"`
	Version string   `json:"version,omitempty"`
	URL     string   `json:"url,omitempty"`
	Applied int      `json:"applied,omitempty"`
	Images  []string `json:"images,omitempty"`
	// Unchecked counts dry-run objects the server could not check (see install.Result).
	Unchecked int `json:"unchecked,omitempty"`
	// Objects installed (or, in a dry run, that would be), labelled.
	Objects []unstructured.Unstructured `json:"-"`
}

// Ensure makes sure a working cert-manager is there, as clusterctl init does (see the package doc):
// Decide, apply its objects, wait.
func Ensure(ctx context.Context, c *cluster.Client, opts Options) (*Result, error) {
	in, err := Decide(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	if len(in.Objects) > 0 {
		res, err := install.Apply(ctx, c, in.Objects, install.ApplyOptions{Source: in.Source, DryRun: opts.DryRun, Log: opts.Log})
		if err != nil {
			if opts.DryRun {
				return nil, fmt.Errorf("dry run of cert-manager %s: %w", in.Result.Version, err)
			}
			return nil, fmt.Errorf("installing cert-manager %s: %w; running the command again completes it", in.Result.Version, err)
		}
		in.Applied(res)
	}
	if err := in.Wait(ctx); err != nil {
		return nil, err
	}
	return in.Result, nil
}

// Install is what Decide found to do about cert-manager: the objects to apply (none when a
// working or externally provisioned cert-manager is there) and the wait that must pass before
// anything that needs cert-manager's webhook (Issuers, Certificates) is applied. Init applies
// Objects together with the providers' objects (install.ApplySets), so that the wait overlaps
// with installing them.
type Install struct {
	Result *Result
	// Objects to apply, labelled (see Prepare); Source names them for errors and progress.
	Objects []unstructured.Unstructured
	Source  string
	wait    func(ctx context.Context) error
}

// Applied records in Result what applying Objects did.
func (in *Install) Applied(r *install.Result) {
	if r != nil {
		in.Result.Applied, in.Result.Unchecked = len(r.Applied), len(r.Unchecked)
	}
}

// Wait waits, up to the configured timeout, until cert-manager works (clusterctl's probe passes);
// it returns at once when there is nothing to wait for.
func (in *Install) Wait(ctx context.Context) error {
	if in.wait == nil {
		return nil
	}
	return in.wait(ctx)
}

// Decide finds out what Ensure has to do, and fetches what it will install. It writes nothing
// but the probe's objects (which it deletes again); a dry run does not even probe.
func Decide(ctx context.Context, c *cluster.Client, opts Options) (*Install, error) {
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	if opts.WaitInterval == 0 {
		opts.WaitInterval = time.Second
	}
	timeout := opts.Config.Timeout
	if timeout == 0 {
		timeout = config.DefaultCertManagerTimeout
	}
	if opts.DryRun {
		return decideDryRun(ctx, c, opts, log)
	}
	probeErr := Probe(ctx, c)
	if probeErr == nil {
		log.Info("Skipping installing cert-manager as it is already installed")
		return &Install{Result: &Result{Action: ActionAlreadyWorking}}, nil
	}
	log.V(1).Info("cert-manager probe failed", "reason", probeErr.Error())
	if opts.Config.ExternallyProvisioned {
		return &Install{Result: &Result{Action: ActionExternal}, wait: func(ctx context.Context) error {
			log.Info("Waiting for the externally provisioned cert-manager to be available...", "timeout", timeout.String())
			if err := waitProbe(ctx, c, probeWait{timeout: timeout, interval: opts.WaitInterval, first: probeErr, log: log}); err != nil {
				return fmt.Errorf("cert-manager is externally provisioned (cert-manager.externallyProvisioned: true), so capctl does not install it, and it %w", err)
			}
			return nil
		}}, nil
	}
	own, err := Owner(ctx, c)
	if err != nil {
		return nil, err
	}
	if own.Foreign && !own.Managed {
		return nil, fmt.Errorf("a cert-manager that capctl/clusterctl did not install is present (CRD %s has no %s=%s label), and it does not work: %v. capctl will not install a second copy over it: repair it, or set cert-manager.externallyProvisioned: true in the config to wait for it",
			CertificatesCRD, inventory.CoreLabel, CoreValue, probeErr)
	}
	comps, err := opts.Fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetching cert-manager %s: %w", opts.Config.Version, err)
	}
	Prepare(comps.Objects, comps.Version)
	log.Info("Installing cert-manager", "version", comps.Version)
	return &Install{
		Result:  &Result{Action: ActionInstalled, Version: comps.Version, URL: comps.URL, Images: comps.Images, Objects: comps.Objects},
		Objects: comps.Objects,
		Source:  "cert-manager " + comps.Version + " (" + comps.URL + ")",
		wait: func(ctx context.Context) error {
			log.Info("Waiting for cert-manager to be available...", "timeout", timeout.String())
			if err := waitProbe(ctx, c, probeWait{objs: comps.Objects, timeout: timeout, interval: opts.WaitInterval, first: probeErr, log: log}); err != nil {
				return fmt.Errorf("cert-manager %s was installed but %w", comps.Version, err)
			}
			return nil
		},
	}, nil
}

func decideDryRun(ctx context.Context, c *cluster.Client, opts Options, log *logging.Logger) (*Install, error) {
	own, err := Owner(ctx, c)
	if err != nil {
		return nil, err
	}
	if own.Managed || own.Foreign || opts.Config.ExternallyProvisioned {
		log.Info("cert-manager appears to be installed; a dry run does not probe it")
		return &Install{Result: &Result{Action: ActionWouldSkip, Version: own.Version}}, nil
	}
	comps, err := opts.Fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetching cert-manager %s: %w", opts.Config.Version, err)
	}
	Prepare(comps.Objects, comps.Version)
	return &Install{
		Result:  &Result{Action: ActionWouldInstall, Version: comps.Version, URL: comps.URL, Images: comps.Images, Objects: comps.Objects},
		Objects: comps.Objects,
		Source:  "cert-manager " + comps.Version,
	}, nil
}

// WaitError is a cert-manager wait that ran out of time, with the reasons found.
type WaitError struct {
	Timeout time.Duration
	Probe   error
	Pending []install.Check
}

func (e *WaitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "did not become available within %s: %v", e.Timeout, e.Probe)
	for _, p := range e.Pending {
		b.WriteString("\n  - ")
		b.WriteString(p.Reason)
	}
	return b.String()
}

func (e *WaitError) Unwrap() error { return e.Probe }

// probeWait is one wait for cert-manager's probe (waitProbe).
type probeWait struct {
	// objs (may be nil) are diagnosed on a timeout, so the error says why cert-manager is not
	// available.
	objs              []unstructured.Unstructured
	timeout, interval time.Duration
	// first is the probe that ran before the wait (may be nil): a probe that could not run
	// because the previous one's namespace is still going away does not replace what an earlier
	// probe found.
	first error
	log   *logging.Logger
}

// waitProbe probes every w.interval until the probe passes or w.timeout.
func waitProbe(ctx context.Context, c client.Client, w probeWait) error {
	objs, timeout, interval, first, log := w.objs, w.timeout, w.interval, w.first, w.log
	deadline := time.Now().Add(timeout)
	nextReport := time.Now().Add(15 * time.Second)
	last := first
	// Right after its CRDs are Established, discovery may not list cert-manager's kinds for a
	// moment, and the probe cannot pass: look for them every 100 ms rather than lose a whole
	// probe interval. Time out here and the probe below says what is missing.
	issuerGVK := schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"}
	_ = cluster.Poll(ctx, 100*time.Millisecond, min(timeout, interval), func(context.Context) (bool, error) {
		_, err := c.RESTMapper().RESTMapping(issuerGVK.GroupKind(), issuerGVK.Version)
		return err == nil, nil
	})
	err := cluster.Poll(ctx, interval, time.Until(deadline), func(ctx context.Context) (bool, error) {
		err := Probe(ctx, c)
		if err == nil {
			return true, nil
		}
		if last == nil || !errors.Is(err, errProbeNamespaceTerminating) {
			last = err
		}
		if time.Now().After(nextReport) {
			nextReport = time.Now().Add(15 * time.Second)
			log.Info("Still waiting for cert-manager", "probe", last.Error(), "timeLeft", time.Until(deadline).Round(time.Second).String())
		}
		return false, nil
	})
	if !errors.Is(err, cluster.ErrTimedOut) {
		return err
	}
	if last == nil {
		last = err
	}
	we := &WaitError{Timeout: timeout, Probe: last}
	for _, ch := range install.Diagnose(ctx, c, objs, false) {
		if !ch.Ready {
			we.Pending = append(we.Pending, ch)
		}
	}
	return we
}

// UpgradePlan is clusterctl's cert-manager upgrade decision.
type UpgradePlan struct {
	// ExternallyManaged: no object carries clusterctl's cert-manager label; nothing to plan.
	ExternallyManaged bool   `json:"externallyManaged"`
	From              string `json:"from,omitempty"`
	To                string `json:"to,omitempty"`
	ShouldUpgrade     bool   `json:"shouldUpgrade"`
	Reason            string `json:"reason,omitempty"`
}

// PlanUpgrade compares the installed cert-manager objects (those labelled
// clusterctl.cluster.x-k8s.io/core=cert-manager, of the kinds in desired) with desired:
// a missing version annotation counts as v0.11.0; an older version (or the same with other build
// metadata) upgrades; the same version upgrades only when the object count or the image set
// differs; a newer one is kept.
func PlanUpgrade(ctx context.Context, c *cluster.Client, desired *Components) (*UpgradePlan, error) {
	installed, err := listInstalled(ctx, c, desired.Objects)
	if err != nil {
		return nil, err
	}
	plan := &UpgradePlan{To: desired.Version}
	if len(installed) == 0 {
		plan.ExternallyManaged = true
		return plan, nil
	}
	want, err := versions.Parse(desired.Version)
	if err != nil {
		return nil, fmt.Errorf("configured cert-manager version %q is not a semantic version: %w", desired.Version, err)
	}
	lowest := ""
	var lowestV *semver.Version
	for _, u := range installed {
		v := u.GetAnnotations()[VersionAnnotation]
		if v == "" {
			v = DefaultInstalledVersion
		}
		sv, err := versions.Parse(v)
		if err != nil {
			sv, _ = versions.Parse(DefaultInstalledVersion)
		}
		if lowestV == nil || sv.LessThan(lowestV) || (sv.Equal(lowestV) && sv.Metadata() != want.Metadata()) {
			lowestV, lowest = sv, v
		}
	}
	plan.From = lowest
	switch {
	case lowestV.LessThan(want):
		plan.ShouldUpgrade, plan.Reason = true, "installed version is older"
	case lowestV.Equal(want) && lowestV.Metadata() != want.Metadata():
		plan.ShouldUpgrade, plan.Reason = true, "same version, different build"
	case lowestV.Equal(want):
		if len(installed) != len(desired.Objects) {
			plan.ShouldUpgrade, plan.Reason = true, fmt.Sprintf("same version, but %d objects installed and %d configured", len(installed), len(desired.Objects))
		} else if a, b := imagesOf(installed), imagesOf(desired.Objects); strings.Join(a, ",") != strings.Join(b, ",") {
			plan.ShouldUpgrade, plan.Reason = true, "same version, different images"
		}
	default:
		plan.Reason = "installed version is newer than the configured one"
	}
	return plan, nil
}

func listInstalled(ctx context.Context, c *cluster.Client, desired []unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	seen := map[string]bool{}
	var out []unstructured.Unstructured
	for _, d := range desired {
		gvk := d.GroupVersionKind()
		if seen[gvk.String()] || gvk.Kind == "Endpoints" || gvk.Kind == "EndpointSlice" {
			continue
		}
		seen[gvk.String()] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.MatchingLabels{inventory.CoreLabel: CoreValue}); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing installed cert-manager %s objects: %w", gvk.Kind, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// imagesOf is the sorted image set of objs, for comparing two installations.
func imagesOf(objs []unstructured.Unstructured) []string {
	out := repository.Images(objs)
	sort.Strings(out)
	return out
}

// Fetch reads the configured cert-manager components (`cert-manager.url` / `.version`) through the
// repository machinery (overrides folder, cache, GitHub or local repository), with the `images:`
// overrides for the "cert-manager" component applied, sorted for install (not yet labelled: see
// Prepare). Version "" is the configured version, "latest" the newest final one.
func Fetch(ctx context.Context, repo *repository.Client, version string) (*Components, error) {
	f, err := repo.CertManagerFile(ctx, version)
	if err != nil {
		return nil, err
	}
	objs, err := repository.ParseYAML(f.URL, f.Raw)
	if err != nil {
		return nil, err
	}
	imgs, err := repo.ImageOverrides()
	if err != nil {
		return nil, err
	}
	if err := repository.ApplyImageOverrides(objs, ImagesComponent, imgs); err != nil {
		return nil, err
	}
	repository.SortForInstall(objs)
	return &Components{Version: f.Version, URL: f.URL, Objects: objs, Images: repository.Images(objs)}, nil
}

// ImagesToInstall lists the images of the cert-manager init would install, and whether it would
// install one: not when the cluster has a cert-manager namespace (clusterctl's rule for listing
// images), else the configured release's images. With c nil no cluster is read: a first run is
// assumed, so cert-manager is included.
func ImagesToInstall(ctx context.Context, c client.Reader, repo *repository.Client) ([]string, bool, error) {
	if c != nil {
		err := c.Get(ctx, client.ObjectKey{Name: Namespace}, &corev1.Namespace{})
		switch {
		case err == nil:
			return nil, false, nil
		case !apierrors.IsNotFound(err):
			return nil, false, fmt.Errorf("checking for the %s namespace: %w", Namespace, err)
		}
	}
	cm, err := Fetch(ctx, repo, "")
	if err != nil {
		return nil, false, fmt.Errorf("cert-manager: %w", err)
	}
	return cm.Images, true, nil
}
