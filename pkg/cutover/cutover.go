// Package cutover is `capctl diagnose v1beta1`: what on a management cluster (and, with -f, in
// local manifests) still depends on the v1beta1 API of Cluster API, which a later Cluster API
// release stops serving. Each finding names the object and the command or edit that fixes it.
//
// It is a diagnose command rather than part of `upgrade plan` because what it finds is not fixed
// by the next provider upgrade alone: ClusterClass patches and manifests in Git are the user's to
// rewrite, and a management cluster is often replaced (blue/green) instead of upgraded. It reads
// only; a kind it may not read is named, its check marked not done, and the view is partial
// (exit 3), never clean.
package cutover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/convert"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// Removed is the API version whose end the check prepares for.
const Removed = "v1beta1"

// Checks, as findings and notes name them.
const (
	CheckStorage       = "storage"
	CheckProvider      = "provider"
	CheckPatchSelector = "patch-selector"
	CheckPatchPath     = "patch-path"
	CheckManifest      = "manifest"
)

// Request is `capctl diagnose v1beta1`.
type Request struct {
	// Files are local manifests (files or directories, as `capctl convert` reads them) checked
	// for objects written at an older API version; empty checks the management cluster only.
	Files []string
	// Stdin is read for a file named "-".
	Stdin io.Reader
	// Offline skips the management cluster: only Files are checked.
	Offline bool
}

// Validate checks the request before anything is read.
func (r Request) Validate() error {
	if r.Offline && len(r.Files) == 0 {
		return errors.New("--offline checks local manifests only: give them with -f FILE|DIR")
	}
	return nil
}

// Finding is one thing that breaks when v1beta1 is no longer served.
type Finding struct {
	Check   string `json:"check"`
	Object  string `json:"object"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// Report is the check of one management cluster (and of the files given).
type Report struct {
	// ManagementCluster is the kubeconfig context checked; empty with Offline.
	ManagementCluster string    `json:"managementCluster,omitempty"`
	Findings          []Finding `json:"findings"`
	// NotChecked are what was not checked, and why (the view is partial when non-empty).
	NotChecked []string `json:"notChecked,omitempty"`
	// Unread are the kinds that could not be read (RBAC).
	Unread []authz.Unreadable `json:"unread,omitempty"`
}

// Partial tells whether something could not be checked.
func (r *Report) Partial() bool { return len(r.NotChecked) > 0 || len(r.Unread) > 0 }

// ExitCode is diagnose's: 3 partial, 2 findings, 0 nothing depends on v1beta1.
func (r *Report) ExitCode() int {
	return multicluster.ViewExit(!r.Partial(), len(r.Findings) > 0, true)
}

// Run checks the Env's management cluster (unless Offline) and the request's files.
func Run(ctx context.Context, e env.Env, req Request) (*Report, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Findings: []Finding{}}
	if !req.Offline {
		c, err := e.Single()
		if err != nil {
			return nil, err
		}
		rep.ManagementCluster = c.ContextName
		if err := checkCluster(ctx, e, c, rep); err != nil {
			return nil, err
		}
	}
	if len(req.Files) > 0 {
		e.Step("Reading the manifests")
		if err := checkFiles(ctx, req.Files, req.Stdin, rep); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return checkOrder(rep.Findings[i].Check) < checkOrder(rep.Findings[j].Check) })
	return rep, nil
}

func checkOrder(c string) int {
	for i, k := range []string{CheckStorage, CheckProvider, CheckPatchSelector, CheckPatchPath, CheckManifest} {
		if c == k {
			return i
		}
	}
	return 99
}

// clusterCheck is one check of a management cluster: its reads and what it found.
type clusterCheck struct {
	c     *cluster.Client
	reads authz.Reads
	rep   *Report
}

func checkCluster(ctx context.Context, e env.Env, c *cluster.Client, rep *Report) error {
	k := &clusterCheck{c: c, rep: rep}
	e.Step("Reading the Cluster API CRDs")
	crds, ok, err := k.listCRDs(ctx)
	if err != nil {
		return err
	}
	if ok {
		e.Step("Counting the objects of CRDs that store v1beta1")
		if err := k.storage(ctx, crds); err != nil {
			return err
		}
		e.Step("Reading the provider inventory")
		if err := k.providers(ctx, crds); err != nil {
			return err
		}
	} else {
		k.notCheck(CheckStorage, "the CRDs cannot be read")
		k.notCheck(CheckProvider, "the CRDs (which declare the providers' contracts) cannot be read")
	}
	e.Step("Reading the ClusterClasses")
	if err := k.clusterClasses(ctx); err != nil {
		return err
	}
	rep.Unread = k.reads.Unread()
	return nil
}

func (k *clusterCheck) notCheck(check, why string) {
	k.rep.NotChecked = append(k.rep.NotChecked, check+": "+why)
}

func (k *clusterCheck) add(f Finding) { k.rep.Findings = append(k.rep.Findings, f) }

// listCRDs lists the CRDs of Cluster API groups (the core's and every provider's).
func (k *clusterCheck) listCRDs(ctx context.Context) ([]apiextensionsv1.CustomResourceDefinition, bool, error) {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	ok, err := k.reads.List(ctx, k.c.Client, list)
	if err != nil || !ok {
		return nil, ok, err
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if contract.IsClusterAPIGroup(crd.Spec.Group) {
			out = append(out, crd)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, true, nil
}

// storage finds the CRDs whose status.storedVersions still holds v1beta1: objects the API
// server may still hold at v1beta1 in etcd, unreadable once the version is gone.
func (k *clusterCheck) storage(ctx context.Context, crds []apiextensionsv1.CustomResourceDefinition) error {
	for i := range crds {
		crd := &crds[i]
		if !contains(crd.Status.StoredVersions, Removed) {
			continue
		}
		storage := contract.StorageVersion(crd)
		n, err := k.count(ctx, crd, storage)
		if err != nil {
			return err
		}
		owner := crd.Labels[inventory.ProviderLabel]
		if owner == "" {
			owner = "no provider label"
		}
		obj := "CustomResourceDefinition " + crd.Name + " (" + owner + ")"
		if storage == Removed {
			k.add(Finding{
				Check:   CheckStorage,
				Object:  obj,
				Message: fmt.Sprintf("stores its objects at %s (storage version %s): %s stored at %s", Removed, storage, objects(n), Removed),
				Fix:     "upgrade its provider to a release of the v1beta2 contract (capctl upgrade plan; its controllers rewrite the stored objects), or move the clusters to a new management cluster (capctl move --plan-replacement --to-kubeconfig NEW)",
			})
			continue
		}
		k.add(Finding{
			Check:  CheckStorage,
			Object: obj,
			Message: fmt.Sprintf("status.storedVersions is [%s]: of its %s, those not rewritten since %s was the storage version are still stored at %s",
				strings.Join(crd.Status.StoredVersions, " "), objects(n), Removed, Removed),
			Fix: "let the provider's controller run (capctl get providers): Cluster API controllers rewrite the stored objects at " + storage + " and then drop " + Removed + " from status.storedVersions",
		})
	}
	return nil
}

// count is the number of objects of a CRD (listed as metadata, a page at a time), or -1 when
// they may not be listed.
func (k *clusterCheck) count(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	n, cont := 0, ""
	for {
		list.Items = nil
		ok, err := k.reads.List(ctx, k.c.Client, list, client.Limit(500), client.Continue(cont))
		if err != nil {
			return 0, fmt.Errorf("counting %s: %w", crd.Name, err)
		}
		if !ok {
			return -1, nil
		}
		n += len(list.Items)
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}

func objects(n int) string {
	switch {
	case n < 0:
		return "objects (not counted: they may not be listed)"
	case n == 1:
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

// providers finds the providers whose CRDs declare no contract newer than v1beta1.
func (k *clusterCheck) providers(ctx context.Context, crds []apiextensionsv1.CustomResourceDefinition) error {
	items, err := inventory.List(ctx, k.c.Client)
	switch {
	case errors.Is(err, inventory.ErrNoInventory):
		k.notCheck(CheckProvider, "no provider inventory (Cluster API is not installed with capctl or clusterctl)")
		return nil
	case authz.Tolerable(err):
		k.reads.Add(authz.NewUnreadable(inventory.CRDName, "", "list", err))
		k.notCheck(CheckProvider, "the provider inventory cannot be read")
		return nil
	case err != nil:
		return err
	}
	labelsOf := map[string][]map[string]string{}
	core := "" // the core provider's CRDs are the contract: it speaks the Cluster CRD's storage version
	for i := range crds {
		l := crds[i].Labels[inventory.ProviderLabel]
		labelsOf[l] = append(labelsOf[l], crds[i].Labels)
		if crds[i].Name == contract.ClusterCRD {
			core = contract.StorageVersion(&crds[i])
		}
	}
	for _, it := range items {
		c := contract.NewestDeclared(labelsOf[it.ManifestLabel()]...)
		if it.Type == provider.CoreProviderType {
			c = core
		}
		if c == "" || contract.Compare(c, Removed) > 0 {
			continue
		}
		k.add(Finding{
			Check:   CheckProvider,
			Object:  fmt.Sprintf("Provider %s/%s %s", it.Namespace, it.ManifestLabel(), it.Version),
			Message: fmt.Sprintf("implements the %s contract (its CRDs declare none newer)", c),
			Fix:     "capctl upgrade plan: it names the release of the v1beta2 contract to upgrade to (capctl upgrade apply); a provider without one blocks the cut-over",
		})
	}
	return nil
}

// clusterClasses checks every ClusterClass's inline patches: a selector at an older apiVersion
// of a Cluster API group, and the JSON patch paths such a selector targets that the v1beta2 kind
// does not have.
func (k *clusterCheck) clusterClasses(ctx context.Context) error {
	gvk, err := servedGVK(k.c.Mapper, schema.GroupKind{Group: contract.Group, Kind: "ClusterClass"})
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil // no ClusterClass kind: nothing to check
		}
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind("ClusterClassList"))
	ok, err := k.reads.List(ctx, k.c.Client, list)
	if err != nil {
		return err
	}
	if !ok {
		k.notCheck(CheckPatchSelector, "the ClusterClasses cannot be read")
		return nil
	}
	for i := range list.Items {
		cc := &list.Items[i]
		name := "ClusterClass " + cc.GetNamespace() + "/" + cc.GetName()
		found, notChecked := Patches(cc.Object)
		for _, f := range found {
			f.Object = name + " " + f.Object
			k.add(f)
		}
		for _, n := range notChecked {
			k.notCheck(CheckPatchPath, name+" "+n)
		}
	}
	return nil
}

// servedGVK is a kind at the version the API server prefers.
func servedGVK(m meta.RESTMapper, gk schema.GroupKind) (schema.GroupVersionKind, error) {
	mapping, err := m.RESTMapping(gk)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return mapping.GroupVersionKind, nil
}

// Patches checks one ClusterClass (as a map, at v1beta1 or v1beta2: the patches have the same
// shape in both): the findings, each naming its patch, and what could not be checked.
func Patches(cc map[string]any) (findings []Finding, notChecked []string) {
	patches, _, _ := unstructured.NestedSlice(cc, "spec", "patches")
	for _, p := range patches {
		pm, _ := p.(map[string]any)
		pname, _ := pm["name"].(string)
		if _, ok := pm["external"]; ok {
			notChecked = append(notChecked, fmt.Sprintf("patch %q: an external patch is computed by its runtime extension; capctl cannot see the paths it writes", pname))
			continue
		}
		defs, _ := pm["definitions"].([]any)
		for di, d := range defs {
			dm, _ := d.(map[string]any)
			sel, _ := dm["selector"].(map[string]any)
			apiVersion, _ := sel["apiVersion"].(string)
			kind, _ := sel["kind"].(string)
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil || !contract.IsClusterAPIGroup(gv.Group) || contract.Compare(gv.Version, conversion.TargetVersion) >= 0 {
				continue
			}
			where := fmt.Sprintf("patch %q definition %d", pname, di)
			newVersion := gv.Group + "/" + conversion.TargetVersion
			findings = append(findings, Finding{
				Check:   CheckPatchSelector,
				Object:  where,
				Message: fmt.Sprintf("selects %s at %s: the topology controller compares the whole apiVersion, so once the templates are %s the patch matches none and is not applied (no error)", kind, apiVersion, conversion.TargetVersion),
				Fix:     fmt.Sprintf("set spec.patches[%q].definitions[%d].selector.apiVersion to %s (and check its paths against %s %s)", pname, di, newVersion, conversion.TargetVersion, kind),
			})
			target := gv.WithKind(kind)
			target.Version = conversion.TargetVersion
			jps, _ := dm["jsonPatches"].([]any)
			for ji, jp := range jps {
				jm, _ := jp.(map[string]any)
				path, _ := jm["path"].(string)
				res, prefix := conversion.FieldPath(target, path)
				switch res {
				case conversion.UnknownKind:
					notChecked = append(notChecked, fmt.Sprintf("%s jsonPatch %d (%s): capctl has no %s type for %s to check the path against", where, ji, path, conversion.TargetVersion, kind))
				case conversion.PathMissing:
					msg := fmt.Sprintf("path %s does not exist in %s %s (it resolves only up to %q)", path, conversion.TargetVersion, kind, prefix)
					if old, _ := conversion.FieldPath(gv.WithKind(kind), path); old == conversion.PathExists {
						msg = fmt.Sprintf("path %s exists in %s %s but not in %s (%s resolves only up to %q)", path, gv.Version, kind, conversion.TargetVersion, conversion.TargetVersion, prefix)
					}
					findings = append(findings, Finding{
						Check:   CheckPatchPath,
						Object:  fmt.Sprintf("%s jsonPatch %d", where, ji),
						Message: msg,
						Fix:     fmt.Sprintf("rewrite the path for %s %s (capctl convert -f on one of your %s shows the %s layout)", conversion.TargetVersion, kind, kind, conversion.TargetVersion),
					})
				}
			}
		}
	}
	return findings, notChecked
}

// checkFiles finds, in local manifests, the objects written at an older API version of a Cluster
// API group (refused once that version is gone) and checks the ClusterClasses among them.
func checkFiles(ctx context.Context, paths []string, stdin io.Reader, rep *Report) error {
	files, err := userinput.ExpandPaths(paths)
	if err != nil {
		return fmt.Errorf("-f: %w", err)
	}
	for _, p := range files {
		data, err := userinput.ReadPath(ctx, p, stdin)
		if err != nil {
			return fmt.Errorf("-f %s: %w", p, err)
		}
		name := p
		if p == "-" {
			name = "standard input"
		}
		// The conversion of capctl convert, in memory: what it would convert is what the API
		// server refuses once the old version is gone.
		f := convert.ConvertText(name, data)
		for _, o := range f.Objects {
			if o.Action == conversion.NotCAPI || o.From == conversion.TargetVersion || contract.Compare(o.From, conversion.TargetVersion) > 0 {
				continue
			}
			fix := "capctl convert -f " + f.Path + " --in-place (or -o FILE)"
			msg := fmt.Sprintf("written at %s: the API server refuses it once %s is no longer served", o.From, o.From)
			if o.Action != conversion.Converted {
				fix = "convert it with its provider's tools"
				if o.Error != "" {
					msg += "; capctl cannot convert it: " + o.Error
				} else if len(o.Warnings) > 0 {
					msg += "; " + o.Warnings[0]
				}
			}
			rep.Findings = append(rep.Findings, Finding{
				Check:   CheckManifest,
				Object:  fmt.Sprintf("%s:%d %s", f.Path, o.Line, o.Object()),
				Message: msg,
				Fix:     fix,
			})
		}
		for _, cc := range clusterClassesIn(f) {
			found, notChecked := Patches(cc.obj)
			for _, fd := range found {
				fd.Object = fmt.Sprintf("%s:%d ClusterClass %s %s", f.Path, cc.line, cc.name, fd.Object)
				rep.Findings = append(rep.Findings, fd)
			}
			for _, n := range notChecked {
				rep.NotChecked = append(rep.NotChecked, fmt.Sprintf("%s: %s:%d ClusterClass %s %s", CheckPatchPath, f.Path, cc.line, cc.name, n))
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fileClusterClass is a ClusterClass read from a file.
type fileClusterClass struct {
	obj  map[string]any
	name string
	line int
}

// clusterClassesIn are the ClusterClasses of a file as written (before any conversion), from
// single documents and from v1 Lists.
func clusterClassesIn(f *convert.FileReport) []fileClusterClass {
	var out []fileClusterClass
	for _, d := range repository.SplitDocuments(f.Input) {
		raw, err := userinput.YAMLToJSON(d.Text)
		if err != nil {
			continue // the conversion report already names the document
		}
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			continue
		}
		items := []any{obj}
		if obj["kind"] == "List" {
			items, _ = obj["items"].([]any)
		}
		for _, it := range items {
			m, _ := it.(map[string]any)
			u := unstructured.Unstructured{Object: m}
			if m == nil || u.GetKind() != "ClusterClass" || u.GroupVersionKind().Group != contract.Group {
				continue
			}
			name := u.GetName()
			if u.GetNamespace() != "" {
				name = u.GetNamespace() + "/" + name
			}
			out = append(out, fileClusterClass{obj: m, name: name, line: d.Line})
		}
	}
	return out
}
