package repository

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/config"
)

// Labels clusterctl puts on every provider object.
const (
	ClusterctlLabel = "clusterctl.cluster.x-k8s.io"
	ProviderLabel   = "cluster.x-k8s.io/provider"
	// InjectCAAnnotation is cert-manager's CA injection annotation ("namespace/certificate").
	InjectCAAnnotation = "cert-manager.io/inject-ca-from"
)

// ParseYAML splits a multi-document YAML text into objects. Empty documents are skipped. A document
// that is not YAML, or not an object with apiVersion and kind, is an error naming name (a file or URL)
// and the line in the whole text.
func ParseYAML(name string, data []byte) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, d := range SplitDocuments(data) {
		if len(bytes.TrimSpace(stripComments(d.Text))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(d.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", name, yamlErrorAt(err, d.Line))
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(j, &obj); err != nil {
			return nil, fmt.Errorf("%s: line %d: the document is not a YAML object (a Kubernetes object with apiVersion and kind was expected)", name, d.Line)
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: line %d: the object has no apiVersion or kind", name, d.Line)
		}
		out = append(out, u)
	}
	return out, nil
}

// Document is one document of a multi-document YAML text.
type Document struct {
	Text []byte
	Line int // 1-based line of the document's first line in the whole text
}

// SplitDocuments splits a multi-document YAML text on separator lines: `---` alone or followed by a
// space (a comment, say). Keeping each document's first line lets errors point into the whole file;
// both components and cluster templates are split here.
//
// Each document's Text is a part of data, not a copy (its capacity ends with it, so appending to one
// cannot overwrite the next): a very large file is not held twice.
func SplitDocuments(data []byte) []Document {
	var docs []Document
	start, from, line := 1, 0, 1
	for pos := 0; pos < len(data); line++ {
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		t := bytes.TrimRight(data[pos:end], "\r\n \t")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, Document{Text: part(data, from, pos), Line: start})
			from, start = end, line+1
		}
		pos = end
	}
	return append(docs, Document{Text: part(data, from, len(data)), Line: start})
}

// part is data[from:to] with its capacity cut at to; never nil, as an empty document's text was.
func part(data []byte, from, to int) []byte {
	if from == to {
		return []byte{}
	}
	return data[from:to:to]
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlErrorAt rewrites the parser's document-relative line number into a line of the whole text.
func yamlErrorAt(err error, docLine int) string {
	line, msg := yamlErrorLine(err, docLine)
	return fmt.Sprintf("line %d: not valid YAML: %s", line, msg)
}

// yamlErrorLine is the line of the whole text a YAML parser error points at (the document's first
// line when it names none) and the error's message without the line.
func yamlErrorLine(err error, docLine int) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	m := yamlLineRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return docLine, msg
	}
	n, _ := strconv.Atoi(msg[m[2]:m[3]])
	return docLine + n - 1, strings.TrimSpace(strings.TrimPrefix(msg[m[1]:], ":"))
}

// clusterScopedKinds are the kinds clusterctl treats as cluster-scoped when rewriting namespaces
// (a kind-name heuristic, spec §4 item 7), plus cert-manager's ClusterIssuer.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "PodSecurityPolicy": true,
	"CertificateSigningRequest": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"VolumeAttachment": true, "StorageClass": true, "CSIDriver": true, "CSINode": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"CustomResourceDefinition": true, "PriorityClass": true, "RuntimeClass": true,
	"ClusterIssuer": true,
}

// IsNamespaced reports whether objects of kind live in a namespace (clusterctl's heuristic).
func IsNamespaced(kind string) bool { return !clusterScopedKinds[kind] }

// InspectTargetNamespace returns the name of the single Namespace object, "" when there is none,
// and an error when there is more than one (clusterctl refuses such components).
func InspectTargetNamespace(objs []unstructured.Unstructured) (string, error) {
	ns := ""
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		if ns != "" {
			return "", fmt.Errorf("invalid components: more than one Namespace object (%s, %s); a provider's components must have at most one", ns, o.GetName())
		}
		ns = o.GetName()
	}
	return ns, nil
}

// SetTargetNamespace moves the components into target (spec §4 items 6-7): the Namespace object is
// renamed (or added when missing), every namespaced object gets the namespace, and references to the
// old namespace are rewritten: ServiceAccount subjects of (Cluster)RoleBindings, webhook and CRD
// conversion client-config services, cert-manager inject-ca-from annotations and Certificate dnsNames.
func SetTargetNamespace(objs []unstructured.Unstructured, target string) ([]unstructured.Unstructured, error) {
	old, err := InspectTargetNamespace(objs)
	if err != nil {
		return nil, err
	}
	if old == "" {
		ns := unstructured.Unstructured{Object: map[string]any{}}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(target)
		objs = append([]unstructured.Unstructured{ns}, objs...)
	}
	for i := range objs {
		o := &objs[i]
		kind := o.GetKind()
		if kind == "Namespace" {
			o.SetName(target)
			continue
		}
		if IsNamespaced(kind) {
			o.SetNamespace(target)
		}
		if ann := o.GetAnnotations(); ann != nil {
			if v, ok := ann[InjectCAAnnotation]; ok {
				if i := strings.Index(v, "/"); i >= 0 {
					ann[InjectCAAnnotation] = target + v[i:]
					o.SetAnnotations(ann)
				}
			}
		}
		switch kind {
		case "RoleBinding", "ClusterRoleBinding":
			fixSubjects(o, old, target)
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			whs, ok, _ := unstructured.NestedSlice(o.Object, "webhooks")
			if ok {
				for _, w := range whs {
					if m, ok := w.(map[string]any); ok {
						setServiceNamespace(m, old, target, "clientConfig", "service", "namespace")
					}
				}
				_ = unstructured.SetNestedSlice(o.Object, whs, "webhooks")
			}
		case "CustomResourceDefinition":
			setServiceNamespace(o.Object, old, target, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		case "Certificate":
			if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") && old != "" {
				names, ok, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
				if ok {
					for j, n := range names {
						names[j] = strings.ReplaceAll(n, "."+old+".", "."+target+".")
					}
					_ = unstructured.SetNestedStringSlice(o.Object, names, "spec", "dnsNames")
				}
			}
		}
	}
	return objs, nil
}

func setServiceNamespace(obj map[string]any, old, target string, fields ...string) {
	if _, ok, _ := unstructured.NestedString(obj, fields...); ok {
		_ = unstructured.SetNestedField(obj, target, fields...)
	}
}

func fixSubjects(o *unstructured.Unstructured, old, target string) {
	subs, ok, _ := unstructured.NestedSlice(o.Object, "subjects")
	if !ok {
		return
	}
	for _, s := range subs {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		ns, _ := m["namespace"].(string)
		if m["kind"] == "ServiceAccount" && (ns == old || ns == "") {
			m["namespace"] = target
		}
	}
	_ = unstructured.SetNestedSlice(o.Object, subs, "subjects")
}

// AddLabels puts clusterctl's labels on every object: `clusterctl.cluster.x-k8s.io: ""` and
// `cluster.x-k8s.io/provider: <manifest label>`.
func AddLabels(objs []unstructured.Unstructured, manifestLabel string) {
	for i := range objs {
		l := objs[i].GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[ClusterctlLabel] = ""
		l[ProviderLabel] = manifestLabel
		objs[i].SetLabels(l)
	}
}

// SortForInstall orders objects as clusterctl installs them: Namespaces first, then cert-manager.io
// objects (so the CA injector finds Certificates before the webhooks and CRDs that reference them),
// then everything else in file order. The sort is stable.
//
// clusterctl does not move CRDs before other objects or webhooks last; capctl's installer waits for
// CRDs to be Established before it applies objects of their kinds, and webhook configurations only
// take effect once their Service answers, so the file order (CRDs first, webhooks late, as kustomize
// writes them) is kept, like clusterctl.
func SortForInstall(objs []unstructured.Unstructured) {
	rank := func(o unstructured.Unstructured) int {
		switch {
		case o.GetKind() == "Namespace":
			return 0
		case strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/"):
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
}

// ApplyImageOverrides rewrites the images of Deployment and DaemonSet containers and init
// containers with the `images:` overrides (spec §2.5): `all`, then component, then
// component/image-name, later fields winning.
func ApplyImageOverrides(objs []unstructured.Unstructured, component string, overrides map[string]config.ImageOverride) error {
	if len(overrides) == 0 {
		return nil
	}
	for i := range objs {
		if err := forEachContainer(&objs[i], func(c map[string]any) error {
			img, _ := c["image"].(string)
			if img == "" {
				return nil
			}
			ref := parseImage(img)
			o := effectiveOverride(overrides, component, ref.name)
			if o == (config.ImageOverride{}) {
				return nil
			}
			c["image"] = ref.apply(o)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func effectiveOverride(overrides map[string]config.ImageOverride, component, image string) config.ImageOverride {
	var out config.ImageOverride
	for _, sel := range []string{"all", component, component + "/" + image} {
		o, ok := overrides[sel]
		if !ok {
			continue
		}
		if o.Repository != "" {
			out.Repository = o.Repository
		}
		if o.Name != "" {
			out.Name = o.Name
		}
		if o.Tag != "" {
			out.Tag = o.Tag
		}
	}
	return out
}

// Images lists the container and init-container images of Deployments and DaemonSets, in order,
// without duplicates.
func Images(objs []unstructured.Unstructured) []string {
	var out []string
	seen := map[string]bool{}
	for i := range objs {
		_ = forEachContainer(&objs[i], func(c map[string]any) error {
			if img, _ := c["image"].(string); img != "" && !seen[img] {
				seen[img] = true
				out = append(out, img)
			}
			return nil
		})
	}
	return out
}

func forEachContainer(o *unstructured.Unstructured, fn func(map[string]any) error) error {
	if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
		return nil
	}
	for _, field := range []string{"initContainers", "containers"} {
		cs, ok, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
		if !ok {
			continue
		}
		for _, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", field); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// imageRef is an image reference split into repository (registry and path), name, tag and digest.
type imageRef struct {
	repository, name, tag, digest string
}

func parseImage(s string) imageRef {
	var r imageRef
	if i := strings.Index(s, "@"); i >= 0 {
		s, r.digest = s[:i], s[i+1:]
	}
	slash := strings.LastIndex(s, "/")
	if i := strings.LastIndex(s, ":"); i > slash {
		s, r.tag = s[:i], s[i+1:]
	}
	if slash >= 0 {
		r.repository, r.name = s[:slash], s[slash+1:]
	} else {
		r.name = s
	}
	return r
}

func (r imageRef) apply(o config.ImageOverride) string {
	if o.Repository != "" {
		r.repository = strings.TrimSuffix(o.Repository, "/")
	}
	if o.Name != "" {
		r.name = o.Name
	}
	if o.Tag != "" {
		r.tag, r.digest = o.Tag, ""
	}
	s := r.name
	if r.repository != "" {
		s = r.repository + "/" + s
	}
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}
