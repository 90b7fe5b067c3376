// Package topology is `capctl topology`: what a ClusterClass, template or Cluster change does to
// every cluster that uses it, computed by Cluster API's own topology code (pkg/topologyengine)
// against the live management clusters, without writing anything.
package topology

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capctl/capctl/internal/digest"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/repository"
)

// DefaultConcurrency is how many clusters are computed at once on one management cluster: each
// is a few reads and a few dry runs, so a handful keeps the API server's queue short.
const DefaultConcurrency = 8

// PlanRequest is `capctl topology plan`.
type PlanRequest struct {
	// Files are the -f paths: files (or "-", standard input) and directories (walked for
	// *.yaml/*.yml), holding the changed or new ClusterClasses, templates and Clusters.
	Files []string
	// Stdin is read for "-".
	Stdin io.Reader
	// Namespace limits the clusters planned to one namespace; empty (with AllNamespaces or not)
	// plans every cluster the change reaches, whatever its namespace.
	Namespace     string
	AllNamespaces bool
	// Clusters limits the plan to these Cluster names.
	Clusters []string
	// Selector is a label selector over the Clusters (kubectl syntax).
	Selector string
	// Diff keeps each change's unified diff in the result.
	Diff bool
	// Save is the path --save writes the plan to, or "".
	Save string
	// Concurrency bounds the clusters computed at once per management cluster.
	Concurrency int
}

// Validate checks the request before any file is read or cluster contacted.
func (r PlanRequest) Validate() error {
	if len(r.Files) == 0 {
		return errors.New("-f is required: pass the changed ClusterClasses, templates and Clusters (files or directories)")
	}
	stdin := 0
	for _, f := range r.Files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("-f - (standard input) can be given once")
	}
	if r.Namespace != "" && r.AllNamespaces {
		return errors.New("--namespace and --all-namespaces cannot be used together")
	}
	if err := cluster.CheckNamespace(r.Namespace); err != nil {
		return fmt.Errorf("--namespace: %w", err)
	}
	for _, c := range r.Clusters {
		if err := cluster.CheckClusterRef(c, ""); err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
	}
	if _, err := labels.Parse(r.Selector); err != nil {
		return fmt.Errorf("--selector %q: %w", r.Selector, err)
	}
	if r.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1 (got %d)", r.Concurrency)
	}
	return nil
}

// Input is one object of the -f files, as the plan file records it.
type Input struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Source    string `json:"source"`
	// Digest is the sha256 of the object as read (canonical JSON).
	Digest string `json:"digest"`
}

// inputs are the -f objects sorted by role.
type inputs struct {
	classes   []*unstructured.Unstructured
	templates []*unstructured.Unstructured
	clusters  []*unstructured.Unstructured
	list      []Input
}

func (in *inputs) all() []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured{}, in.classes...)
	out = append(out, in.templates...)
	return append(out, in.clusters...)
}

// templateGroups are the API groups whose *Template kinds a ClusterClass references.
func isTemplate(u *unstructured.Unstructured) bool {
	g := u.GroupVersionKind().Group
	return strings.HasSuffix(u.GetKind(), "Template") && strings.HasSuffix(g, ".cluster.x-k8s.io")
}

// readInputs reads, bounds and sorts the -f objects: ClusterClasses and Clusters at
// cluster.x-k8s.io/v1beta2, and provider templates. Anything else is refused, naming the file
// and document.
func readInputs(ctx context.Context, req PlanRequest) (*inputs, error) {
	files, err := userinput.ExpandPaths(req.Files)
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	in := &inputs{}
	seen := map[string]string{}
	for _, f := range files {
		name, data, err := readFile(ctx, f, req.Stdin)
		if err != nil {
			return nil, err
		}
		objs, err := repository.ParseObjects(name, data)
		if err != nil {
			return nil, err
		}
		for i := range objs {
			u := &objs[i]
			if err := in.add(u, name, seen); err != nil {
				return nil, err
			}
		}
	}
	if len(in.classes)+len(in.templates)+len(in.clusters) == 0 {
		return nil, fmt.Errorf("-f %s: no ClusterClass, template or Cluster found", strings.Join(req.Files, ","))
	}
	return in, nil
}

func readFile(ctx context.Context, f string, stdin io.Reader) (string, []byte, error) {
	data, err := userinput.ReadPath(ctx, f, stdin)
	if err != nil {
		return "", nil, fmt.Errorf("-f %s: %w", f, err)
	}
	if f == "-" {
		return "standard input", data, nil
	}
	return f, data, nil
}

func (in *inputs) add(u *unstructured.Unstructured, source string, seen map[string]string) error {
	gvk := u.GroupVersionKind()
	what := fmt.Sprintf("%s: %s %s", source, u.GetKind(), u.GetName())
	if u.GetName() == "" {
		return fmt.Errorf("%s: %s has no metadata.name", source, u.GetKind())
	}
	switch {
	case gvk.Group == clusterv1.GroupVersion.Group && (gvk.Kind == "ClusterClass" || gvk.Kind == "Cluster"):
		if gvk.Version != clusterv1.GroupVersion.Version {
			return fmt.Errorf("%s is %s: topology plan reads %s (what the v1.14 topology controller computes with); convert the file with `capctl convert -f %s`", what, u.GetAPIVersion(), clusterv1.GroupVersion, source)
		}
		if gvk.Kind == "ClusterClass" {
			in.classes = append(in.classes, u)
		} else {
			in.clusters = append(in.clusters, u)
		}
	case isTemplate(u):
		in.templates = append(in.templates, u)
	default:
		return fmt.Errorf("%s is not a ClusterClass, a provider template (*Template of a *.cluster.x-k8s.io group) or a Cluster: topology plan takes only those; leave it out of -f", what)
	}
	key := gvk.GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
	if prev, dup := seen[key]; dup {
		return fmt.Errorf("%s is given twice (also in %s)", what, prev)
	}
	seen[key] = source
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	in.list = append(in.list, Input{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Source: source, Digest: digest.Bytes(data)})
	return nil
}
