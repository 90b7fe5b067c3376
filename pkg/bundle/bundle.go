// Package bundle is `capctl diagnose bundle`: a redacted support bundle of a management cluster,
// one tar.gz for whoever helps and cannot reach the cluster. It holds every Cluster API object
// of the selection, the Cluster API CRDs (versions and storedVersions), the provider inventory,
// the providers' Deployments, pods, recent events and controller logs (where pods/log is
// allowed), the fleet's describe and diagnose views, and a manifest of what is in it and what
// was left out and why.
//
// Secrets are never bundled with their data: a Secret appears as its name, type and key names;
// kubeconfig and token Secrets not at all. The bundle is bounded (MaxSize, uncompressed): what
// does not fit is left out and named in the manifest. It only reads, and is written 0600 in one
// rename, so an interrupted run leaves no partial file.
package bundle

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/targz"
	"github.com/capctl/capctl/internal/version"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/replay"
)

// Defaults of the request.
const (
	DefaultMaxSize  int64 = 256 << 20
	DefaultLogLines int64 = 2000
	// maxEvents bounds the events kept per namespace (the newest).
	maxEvents = 500
	// ReplayFile is the record of the management cluster's answers to the views' reads
	// (replay.Recording): what `--from-bundle` answers the same reads from.
	ReplayFile = "replay/api.json"
	// WorkloadsFile is the record of the workload clusters the views read
	// (diagnose.WorkloadRecord): a bundle holds no kubeconfig to read them again.
	WorkloadsFile = "replay/workloads.json"
)

// Request is `capctl diagnose bundle`.
type Request struct {
	// Output is the .tar.gz file to write (created 0600).
	Output string
	// Namespace selects the workload clusters' namespace (default: the kubeconfig context's);
	// AllNamespaces selects every namespace.
	Namespace     string
	AllNamespaces bool
	// MaxSize bounds the bundle's uncompressed size (default DefaultMaxSize).
	MaxSize int64
	// LogLines is how many of the newest lines of each controller container's log to keep
	// (default DefaultLogLines; negative: no logs).
	LogLines int64
	// Views, when set, computes the fleet's describe and diagnose views for the bundle (JSON,
	// as the commands print them), by file name; the command wires the two verbs in, so this
	// package runs neither. They run on e, whose management cluster is recorded (ReplayFile) and
	// whose clock is the bundle's time, so that `--from-bundle` gives them again offline.
	Views func(ctx context.Context, e env.Env, namespace string, all bool) (map[string]any, error)
}

// Validate checks the request before anything is read.
func (r Request) Validate() error {
	switch {
	case r.Output == "":
		return errors.New("-o/--output FILE.tar.gz is required: where to write the bundle")
	case !strings.HasSuffix(r.Output, ".tar.gz") && !strings.HasSuffix(r.Output, ".tgz"):
		return fmt.Errorf("-o %s: the bundle is a gzipped tar: name it FILE.tar.gz", r.Output)
	case r.AllNamespaces && r.Namespace != "":
		return errors.New("-n/--namespace and -A/--all-namespaces cannot be used together")
	case r.MaxSize < 0:
		return errors.New("--max-size must be positive")
	}
	return cluster.CheckNamespace(r.Namespace)
}

// Left is one thing the bundle does not hold, and why.
type Left struct {
	What string `json:"what"`
	Why  string `json:"why"`
}

// File is one file of the bundle.
type File struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
}

// Manifest is manifest.json, the bundle's first file: what is in it and what was left out.
type Manifest struct {
	Kind              string    `json:"kind"`
	Capctl            string    `json:"capctl"`
	Created           time.Time `json:"created"`
	ManagementCluster string    `json:"managementCluster"`
	Server            string    `json:"server"`
	Namespaces        []string  `json:"namespaces"`
	AllNamespaces     bool      `json:"allNamespaces,omitempty"`
	Files             []File    `json:"files"`
	LeftOut           []Left    `json:"leftOut"`
	// Unread are the kinds that could not be read (RBAC): the bundle is partial.
	Unread []authz.Unreadable `json:"unread,omitempty"`
	// ManagementClusters are the management clusters of a bundle made with --contexts or
	// --all-contexts, each in its own folder (ManagementCluster, Server and Namespaces are then
	// empty).
	ManagementClusters []Bundled `json:"managementClusters,omitempty"`
}

// Bundled is one management cluster of a bundle over several.
type Bundled struct {
	Context string `json:"context"`
	// Dir is its folder in the bundle ("<context>/").
	Dir       string `json:"dir,omitempty"`
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Error says why it could not be read; nothing of it is in the bundle then.
	Error string `json:"error,omitempty"`
}

// Result is what Run wrote.
type Result struct {
	Path     string   `json:"path"`
	Bytes    int64    `json:"bytes"`
	Manifest Manifest `json:"manifest"`
}

// Partial tells whether some kind, or some management cluster, could not be read.
func (r *Result) Partial() bool {
	for _, m := range r.Manifest.ManagementClusters {
		if m.Error != "" {
			return true
		}
	}
	return len(r.Manifest.Unread) > 0
}

// ExitCode is 3 when the bundle misses a kind or a management cluster it could not read, else 0.
func (r *Result) ExitCode() int {
	if r.Partial() {
		return 3
	}
	return 0
}

// RenderText says where the bundle is and what it left out.
func (r *Result) RenderText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote %s (%d bytes, %d files, mode 0600).\n", r.Path, r.Bytes, len(r.Manifest.Files))
	if len(r.Manifest.LeftOut) > 0 {
		fmt.Fprintf(&b, "Left out (%d, listed in manifest.json):\n", len(r.Manifest.LeftOut))
		for _, l := range r.Manifest.LeftOut {
			fmt.Fprintf(&b, "  - %s: %s\n", l.What, l.Why)
		}
	}
	for _, u := range r.Manifest.Unread {
		fmt.Fprintf(&b, "Not read: %s\n", u.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Run reads the management cluster, or each of several (--contexts), and writes the bundle.
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.MaxSize == 0 {
		req.MaxSize = DefaultMaxSize
	}
	if req.LogLines == 0 {
		req.LogLines = DefaultLogLines
	}
	out := &contents{max: req.MaxSize, files: map[string][]byte{}}
	out.m = Manifest{Kind: "capctl.io/v1alpha1 SupportBundle", Capctl: version.Get().GitVersion, Created: e.Clock().UTC(),
		AllNamespaces: req.AllNamespaces, LeftOut: []Left{}}
	var builders []*builder
	if !e.Several() {
		c, err := e.Single()
		if err != nil {
			return nil, err
		}
		b := &builder{contents: out, c: c, e: e, req: req, member: e.Management[0]}
		out.m.ManagementCluster, out.m.Server = c.ContextName, c.Config.Host
		if !req.AllNamespaces {
			b.namespace = c.NamespaceOr(req.Namespace)
			out.m.Namespaces = []string{b.namespace}
		}
		builders = append(builders, b)
	} else {
		for _, m := range e.Management {
			bd := Bundled{Context: m.Context}
			if m.Err != nil {
				bd.Error = m.Err.Error()
				out.leave(m.Context, "management cluster not read: "+bd.Error)
				out.m.ManagementClusters = append(out.m.ManagementClusters, bd)
				continue
			}
			bd.Dir, bd.Server = contextDir(m.Context), m.Client.Config.Host
			b := &builder{contents: out, c: m.Client, e: e, req: req, member: m, dir: bd.Dir}
			if !req.AllNamespaces {
				b.namespace = m.Client.NamespaceOr(req.Namespace)
				bd.Namespace = b.namespace
			}
			out.m.ManagementClusters = append(out.m.ManagementClusters, bd)
			builders = append(builders, b)
		}
	}
	for _, b := range builders {
		if len(builders) > 1 || e.Several() {
			e.Step("Reading management cluster " + b.member.Context)
		}
		if err := b.collect(ctx); err != nil {
			return nil, err
		}
	}
	if req.Views != nil {
		e.Step("Computing the describe and diagnose views")
		if err := out.views(ctx, e, req, builders); err != nil {
			return nil, err
		}
	}
	data, err := out.archive()
	if err != nil {
		return nil, err
	}
	if err := output.WritePrivateFile(req.Output, data); err != nil {
		return nil, err
	}
	return &Result{Path: req.Output, Bytes: int64(len(data)), Manifest: out.m}, nil
}

// contextDir is the folder of a management cluster in a bundle over several: its context name,
// made a plain path segment.
func contextDir(context string) string {
	r := strings.NewReplacer("/", "_", "\\", "_", "..", "__")
	return r.Replace(context) + "/"
}

// contents is the bundle being written: its manifest and files, in order, within the size bound.
type contents struct {
	m     Manifest
	files map[string][]byte
	order []string
	size  int64
	max   int64
}

// builder collects one management cluster's files into the bundle, under dir ("" for a bundle
// of one management cluster).
type builder struct {
	*contents
	c      *cluster.Client
	e      env.Env
	member multicluster.Member
	req    Request
	reads  authz.Reads
	dir    string
	// namespace is the selected namespace ("" with all namespaces).
	namespace string
}

// add puts one file of this management cluster in the bundle.
func (b *builder) add(name string, v any) { b.contents.add(b.dir+name, v) }

// leave names something of this management cluster the bundle does not hold.
func (b *builder) leave(what, why string) { b.contents.leave(b.dir+what, why) }

// add puts one file in the bundle, or leaves it out (named) when the size bound is reached.
func (b *contents) add(name string, v any) {
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.MarshalIndent(v, "", "  "); err != nil {
			b.leave(name, "cannot be written as JSON: "+err.Error())
			return
		}
	}
	if b.size+int64(len(data)) > b.max {
		b.leave(name, fmt.Sprintf("%d bytes would pass --max-size %d", len(data), b.max))
		return
	}
	b.size += int64(len(data))
	b.files[name] = data
	b.order = append(b.order, name)
	b.m.Files = append(b.m.Files, File{Name: name, Bytes: len(data)})
}

func (b *contents) leave(what, why string) {
	b.m.LeftOut = append(b.m.LeftOut, Left{What: what, Why: why})
}

// inSelection tells whether a namespaced object of namespace ns is in the bundle's selection.
func (b *builder) inSelection(ns string) bool {
	return b.req.AllNamespaces || ns == "" || ns == b.namespace
}

func (b *builder) collect(ctx context.Context) error {
	b.e.Step("Reading the Cluster API CRDs")
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	ok, err := b.reads.List(ctx, b.c.Client, crds)
	if err != nil {
		return err
	}
	var capi []apiextensionsv1.CustomResourceDefinition
	if ok {
		for _, crd := range crds.Items {
			if contract.IsClusterAPIGroup(crd.Spec.Group) || crd.Spec.Group == inventory.GVK.Group {
				capi = append(capi, crd)
			}
		}
		sort.Slice(capi, func(i, j int) bool { return capi[i].Name < capi[j].Name })
		b.add("crds.json", crdSummaries(capi))
	}
	if v, err := b.c.Discovery.ServerVersion(); err == nil {
		b.add("versions.json", map[string]any{"capctl": version.Get(), "kubernetes": v})
	}
	b.e.Step("Reading the Cluster API objects")
	for i := range capi {
		if err := b.objects(ctx, &capi[i]); err != nil {
			return err
		}
	}
	b.e.Step("Reading the providers' Deployments, pods and events")
	if err := b.providers(ctx); err != nil {
		return err
	}
	if err := b.secrets(ctx); err != nil {
		return err
	}
	if b.namespace != "" {
		if err := b.events(ctx, b.namespace); err != nil {
			return err
		}
	}
	unread := b.reads.Unread()
	b.m.Unread = append(b.m.Unread, unread...)
	for _, u := range unread {
		b.leave(u.Resource, "cannot "+u.Verb+": "+u.Reason)
	}
	return nil
}

// views computes the request's views over the bundled management clusters, each reached through
// a recorded copy of its client, and bundles them with each cluster's record (ReplayFile, in its
// folder), which answers the same reads offline.
func (out *contents) views(ctx context.Context, e env.Env, req Request, builders []*builder) error {
	ve := e
	ve.Management = append([]multicluster.Member(nil), e.Management...)
	recs := make([]*replay.Recorder, len(builders))
	for i, b := range builders {
		recs[i] = replay.NewRecorder()
		cfg := rest.CopyConfig(b.c.Config)
		live, rec := cfg.WrapTransport, recs[i]
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if live != nil {
				rt = live(rt)
			}
			return rec.Wrap(rt)
		}
		rc, err := cluster.NewForConfig(cfg, cluster.Options{ReadOnly: true}, b.c.KubeconfigPath, b.c.ContextName, b.c.Namespace)
		if err != nil {
			return err
		}
		// In the members' order; those that could not be read stay as they are.
		for j := range ve.Management {
			if ve.Management[j].Context == b.member.Context {
				ve.Management[j] = multicluster.Member{Context: b.member.Context, Client: rc, UID: b.member.UID}
			}
		}
	}
	created := out.m.Created
	ve.Now = func() time.Time { return created }
	views, err := req.Views(ctx, ve, req.Namespace, req.AllNamespaces)
	if err != nil {
		out.leave("describe.json, diagnose.json, "+ReplayFile, "the views could not be computed: "+err.Error())
		return nil
	}
	names := make([]string, 0, len(views))
	for n := range views {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out.add(n, views[n])
	}
	for i, b := range builders {
		b.add(ReplayFile, recs[i].Recording())
	}
	return nil
}

// crdSummary is what the bundle keeps of a CRD: enough to know which versions exist and which
// are stored, without the schemas.
type crdSummary struct {
	Name           string            `json:"name"`
	Group          string            `json:"group"`
	Kind           string            `json:"kind"`
	Scope          string            `json:"scope"`
	Versions       []crdVersion      `json:"versions"`
	StoredVersions []string          `json:"storedVersions"`
	Labels         map[string]string `json:"labels,omitempty"`
}

type crdVersion struct {
	Name    string `json:"name"`
	Served  bool   `json:"served"`
	Storage bool   `json:"storage"`
}

func crdSummaries(crds []apiextensionsv1.CustomResourceDefinition) []crdSummary {
	out := make([]crdSummary, 0, len(crds))
	for _, crd := range crds {
		s := crdSummary{Name: crd.Name, Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Scope: string(crd.Spec.Scope),
			StoredVersions: crd.Status.StoredVersions, Labels: crd.Labels}
		for _, v := range crd.Spec.Versions {
			s.Versions = append(s.Versions, crdVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
		}
		out = append(out, s)
	}
	return out
}

// objects bundles every object of one CRD in the selection, at its storage version, without
// managedFields, as objects/<plural>.<group>.json.
func (b *builder) objects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	v := contract.StorageVersion(crd)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: v, Kind: crd.Spec.Names.ListKind})
	var opts []client.ListOption
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped && !b.req.AllNamespaces {
		opts = append(opts, client.InNamespace(b.namespace))
	}
	ok, err := b.reads.List(ctx, b.c.Client, list, opts...)
	if err != nil {
		return fmt.Errorf("listing %s: %w", crd.Name, err)
	}
	if !ok || len(list.Items) == 0 {
		return nil
	}
	items := make([]map[string]any, 0, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		u.SetManagedFields(nil)
		items = append(items, u.Object)
	}
	b.add(path.Join("objects", crd.Spec.Names.Plural+"."+crd.Spec.Group+".json"), map[string]any{
		"apiVersion": crd.Spec.Group + "/" + v, "kind": crd.Spec.Names.ListKind, "items": items})
	return nil
}

// providers bundles the inventory and, per provider namespace, its Deployments, pods, events and
// the controllers' logs.
func (b *builder) providers(ctx context.Context) error {
	items, err := inventory.List(ctx, b.c.Client)
	switch {
	case errors.Is(err, inventory.ErrNoInventory):
		b.leave("inventory.json", "no provider inventory on this cluster")
		return nil
	case authz.Tolerable(err):
		b.reads.Add(authz.NewUnreadable(inventory.CRDName, "", "list", err))
		return nil
	case err != nil:
		return err
	}
	b.add("inventory.json", items)
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.Namespace] {
			continue
		}
		seen[it.Namespace] = true
		if err := b.providerNamespace(ctx, it.Namespace); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) providerNamespace(ctx context.Context, ns string) error {
	deps := &unstructured.UnstructuredList{}
	deps.SetAPIVersion("apps/v1")
	deps.SetKind("DeploymentList")
	if ok, err := b.reads.List(ctx, b.c.Client, deps, client.InNamespace(ns)); err != nil {
		return err
	} else if ok {
		for i := range deps.Items {
			deps.Items[i].SetManagedFields(nil)
		}
		b.add(path.Join("providers", ns, "deployments.json"), deps.Items)
	}
	pods := &corev1.PodList{}
	ok, err := b.reads.List(ctx, b.c.Client, pods, client.InNamespace(ns))
	if err != nil {
		return err
	}
	if ok {
		for i := range pods.Items {
			pods.Items[i].ManagedFields = nil
		}
		b.add(path.Join("providers", ns, "pods.json"), pods.Items)
		b.logs(ctx, pods.Items)
	}
	return b.events(ctx, ns)
}

// events bundles a namespace's newest events.
func (b *builder) events(ctx context.Context, ns string) error {
	evs := &corev1.EventList{}
	ok, err := b.reads.List(ctx, b.c.Client, evs, client.InNamespace(ns))
	if err != nil || !ok {
		return err
	}
	sort.Slice(evs.Items, func(i, j int) bool { return eventTime(&evs.Items[i]).After(eventTime(&evs.Items[j])) })
	if len(evs.Items) > maxEvents {
		b.leave(path.Join("events", ns+".json"), fmt.Sprintf("only the newest %d of %d events kept", maxEvents, len(evs.Items)))
		evs.Items = evs.Items[:maxEvents]
	}
	for i := range evs.Items {
		evs.Items[i].ManagedFields = nil
	}
	b.add(path.Join("events", ns+".json"), evs.Items)
	return nil
}

func eventTime(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// logs bundles the newest lines of each container of the pods, where the API server serves them.
func (b *builder) logs(ctx context.Context, pods []corev1.Pod) {
	if b.req.LogLines < 0 {
		return
	}
	cs, err := b.c.Kubernetes()
	if err != nil {
		b.leave("logs", "no client for pod logs: "+err.Error())
		return
	}
	for _, p := range pods {
		for _, ct := range p.Spec.Containers {
			name := path.Join("logs", p.Namespace, p.Name, ct.Name+".log")
			if p.Spec.NodeName == "" {
				// The API server answers an empty log for a pod no node runs.
				b.leave(name, "the pod is not scheduled on a node: it has no log")
				continue
			}
			lines := b.req.LogLines
			data, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ct.Name, TailLines: &lines, LimitBytes: &b.max}).Do(ctx).Raw()
			switch {
			case apierrors.IsForbidden(err):
				b.leave(name, "pods/log: forbidden (get on pods/log in "+p.Namespace+" would include it)")
				continue
			case err != nil:
				b.leave(name, "pods/log: not served: "+shorten(err.Error()))
				continue
			}
			b.add(name, data)
		}
	}
}

// secrets lists the selection's Secrets as name, type and key names only; kubeconfig and token
// Secrets are left out altogether.
func (b *builder) secrets(ctx context.Context) error {
	list := &corev1.SecretList{}
	var opts []client.ListOption
	if !b.req.AllNamespaces {
		opts = append(opts, client.InNamespace(b.namespace))
	}
	ok, err := b.reads.List(ctx, b.c.Client, list, opts...)
	if err != nil || !ok {
		return err
	}
	type secret struct {
		Namespace string   `json:"namespace"`
		Name      string   `json:"name"`
		Type      string   `json:"type"`
		Keys      []string `json:"keys"`
	}
	out := []secret{}
	skipped := 0
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeServiceAccountToken || s.Type == corev1.SecretTypeBootstrapToken || strings.HasSuffix(s.Name, "-kubeconfig") {
			skipped++
			continue
		}
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out = append(out, secret{Namespace: s.Namespace, Name: s.Name, Type: string(s.Type), Keys: keys})
	}
	b.add("secrets.json", out)
	b.leave("Secret data", "never bundled: Secrets appear in secrets.json as name, type and key names")
	if skipped > 0 {
		b.leave(fmt.Sprintf("%d kubeconfig and token Secrets", skipped), "never bundled, not even by name")
	}
	return nil
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// archive writes the manifest and the files into a gzipped tar, in a stable order.
func (b *contents) archive() ([]byte, error) {
	manifest, err := json.MarshalIndent(b.m, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []targz.File{{Name: "manifest.json", Data: manifest}}
	for _, name := range b.order {
		files = append(files, targz.File{Name: name, Data: b.files[name]})
	}
	return targz.Write(files, 0o600, b.m.Created, gzip.DefaultCompression)
}
