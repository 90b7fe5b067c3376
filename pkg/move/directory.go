package move

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/version"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
)

// ManifestFile is the file that makes a directory a capctl backup.
const ManifestFile = "capctl-backup.yaml"

// Manifest identity.
const (
	ManifestAPIVersion = "capctl.cluster.x-k8s.io/v1alpha1"
	ManifestKind       = "MoveBackup"
)

// ErrNotBackup is returned for a directory that is not (or no longer) a complete capctl backup.
var ErrNotBackup = errors.New("not a capctl backup")

// Manifest describes a backup: where it came from, the graph, and a checksum per file.
type Manifest struct {
	APIVersion  string               `json:"apiVersion"`
	Kind        string               `json:"kind"`
	ToolVersion string               `json:"toolVersion"`
	Created     time.Time            `json:"created"`
	Source      ManifestSource       `json:"source"`
	Scope       Scope                `json:"scope"`
	Providers   []inventory.Provider `json:"providers,omitempty"`
	Objects     []ManifestObject     `json:"objects"`
}

// ManifestSource is the cluster a backup was taken from.
type ManifestSource struct {
	Server     string `json:"server"`
	Context    string `json:"context,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	ClusterID  string `json:"clusterID"`
}

// ManifestObject is one object of the backup and its place in the graph.
type ManifestObject struct {
	File       string      `json:"file"`
	Ref        Ref         `json:"ref"`
	Owners     []types.UID `json:"owners,omitempty"`
	SoftOwners []types.UID `json:"softOwners,omitempty"`
	Level      int         `json:"level"`
	Global     bool        `json:"global,omitempty"`
	UserPaused bool        `json:"userPaused,omitempty"`
	SHA256     string      `json:"sha256"`
}

// ToDirectory writes the graph selected by opts.Scope to dir: one YAML file per object (mode
// 0600) and a manifest. The source is paused while it is read and unpaused afterwards (objects
// the user had paused stay paused).
func ToDirectory(ctx context.Context, src *cluster.Client, dir string, opts Options) (*Report, error) {
	opts.defaults()
	start := opts.Now()
	srcReq := src.Requests()
	rep := &Report{}
	defer func() {
		rep.SourceRequests = src.Requests() - srcReq
		rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	if err := checkEmptyDir(dir); err != nil {
		return rep, err
	}
	srcID, err := ClusterID(ctx, src)
	if err != nil {
		return rep, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	if opts.Scope.Namespace == "" && !opts.Scope.AllNamespaces {
		opts.Scope.Namespace = src.Namespace
	}
	rep.Scope = opts.Scope
	g, err := Discover(ctx, src, opts.Scope)
	if err != nil {
		return rep, err
	}
	rep.Graph = g
	fillReport(rep, g)
	if g.Count() == 0 {
		return rep, nothingToMove(opts.Scope, src)
	}
	if p := provisioningProblems(g); len(p) > 0 {
		return rep, fmt.Errorf("cannot start the backup:\n  - %s", strings.Join(p, "\n  - "))
	}
	m := &mover{src: src, opts: opts, g: g, moveID: "backup-" + rand.String(8), uids: map[types.UID]types.UID{}}
	rep.MoveID = m.moveID
	err = m.pauseSource(ctx)
	if err == nil {
		err = WaitBlockMove(ctx, src, g, opts)
	}
	if err == nil {
		err = writeBackup(dir, g, Manifest{
			APIVersion: ManifestAPIVersion, Kind: ManifestKind, ToolVersion: version.Get().GitVersion,
			Created: opts.Now().UTC(), Scope: opts.Scope, Providers: g.Providers,
			Source: ManifestSource{Server: src.Config.Host, Context: src.ContextName, Kubeconfig: src.KubeconfigPath, ClusterID: srcID},
		})
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if uerr := m.unpause(uctx, src, m.paused, "source"); uerr != nil {
		return rep, errors.Join(err, fmt.Errorf("unpausing the source after the backup: %w", uerr))
	}
	if err != nil {
		return rep, fmt.Errorf("backup to %s: %w (the source is unchanged and unpaused)", dir, err)
	}
	rep.Created = g.Count()
	return rep, nil
}

func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating the backup directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading the backup directory: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("the backup directory %s is not empty (%d entries): choose an empty or new directory", dir, len(entries))
	}
	return nil
}

func fileName(n *Node, used map[string]bool) string {
	ns := n.Ref.Namespace
	base := fmt.Sprintf("%s_%s_%s", n.Ref.Kind, ns, n.Ref.Name)
	name := base + ".yaml"
	if used[name] { // same kind name in two API groups
		gv := strings.ReplaceAll(n.Ref.APIVersion, "/", "_")
		name = gv + "_" + base + ".yaml"
	}
	used[name] = true
	return name
}

func writeBackup(dir string, g *Graph, man Manifest) error {
	used := map[string]bool{}
	for _, n := range g.Moved() {
		b, err := yaml.Marshal(n.Obj.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", n.Ref, err)
		}
		name := fileName(n, used)
		if err := writeFile0600(filepath.Join(dir, name), b); err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		man.Objects = append(man.Objects, ManifestObject{
			File: name, Ref: n.Ref, Owners: n.Owners, SoftOwners: n.SoftOwners, Level: n.Level,
			Global: n.Global, UserPaused: n.UserPaused, SHA256: hex.EncodeToString(sum[:]),
		})
	}
	b, err := yaml.Marshal(man)
	if err != nil {
		return err
	}
	// The manifest is written last: a directory without it is an unfinished backup.
	return writeFile0600(filepath.Join(dir, ManifestFile), b)
}

func writeFile0600(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// ReadBackup reads and checks a backup directory: the manifest, every file it lists with its
// checksum and identity, and no file it does not list.
func ReadBackup(dir string) (*Manifest, *Graph, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s has no %s (capctl writes it with `capctl move --to-directory`)", ErrNotBackup, dir, ManifestFile)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	man := &Manifest{}
	if err := yaml.UnmarshalStrict(b, man); err != nil {
		return nil, nil, fmt.Errorf("%w: %s is unreadable: %v", ErrNotBackup, filepath.Join(dir, ManifestFile), err)
	}
	if man.APIVersion != ManifestAPIVersion || man.Kind != ManifestKind {
		return nil, nil, fmt.Errorf("%w: %s is a %s %s, not a %s %s", ErrNotBackup, filepath.Join(dir, ManifestFile), man.APIVersion, man.Kind, ManifestAPIVersion, ManifestKind)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	listed := map[string]bool{ManifestFile: true}
	for _, o := range man.Objects {
		listed[o.File] = true
	}
	var extra []string
	for _, e := range entries {
		if !listed[e.Name()] {
			extra = append(extra, e.Name())
		}
	}
	if len(extra) > 0 {
		return nil, nil, fmt.Errorf("%w: %s holds files the manifest does not list: %s", ErrNotBackup, dir, strings.Join(extra, ", "))
	}
	g := &Graph{Nodes: map[types.UID]*Node{}, Providers: man.Providers}
	var nodes []*Node
	var problems []string
	for _, mo := range man.Objects {
		if filepath.Base(mo.File) != mo.File {
			problems = append(problems, fmt.Sprintf("%s: not a plain file name", mo.File))
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, mo.File))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", mo.File, err))
			continue
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != mo.SHA256 {
			problems = append(problems, fmt.Sprintf("%s: checksum mismatch (the file was changed after the backup)", mo.File))
			continue
		}
		u := &unstructured.Unstructured{}
		js, err := yaml.YAMLToJSON(data)
		if err == nil {
			err = u.UnmarshalJSON(js) // integers stay integers, as the API server returns them
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", mo.File, err))
			continue
		}
		if u.GetAPIVersion() != mo.Ref.APIVersion || u.GetKind() != mo.Ref.Kind || u.GetNamespace() != mo.Ref.Namespace || u.GetName() != mo.Ref.Name || u.GetUID() != mo.Ref.UID {
			problems = append(problems, fmt.Sprintf("%s: holds %s %s/%s, the manifest says %s", mo.File, u.GetKind(), u.GetNamespace(), u.GetName(), mo.Ref))
			continue
		}
		n := &Node{Obj: u, Ref: mo.Ref, Owners: mo.Owners, SoftOwners: mo.SoftOwners, Global: mo.Global, UserPaused: mo.UserPaused, Level: -1, inMove: true}
		g.Nodes[n.Ref.UID] = n
		nodes = append(nodes, n)
	}
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("%w: %s is damaged:\n  - %s", ErrNotBackup, dir, strings.Join(problems, "\n  - "))
	}
	for _, n := range nodes {
		for _, u := range append(append([]types.UID{}, n.Owners...), n.SoftOwners...) {
			o, ok := g.Nodes[u]
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s names an owner (uid %s) of %s that is not in the backup", ErrNotBackup, ManifestFile, u, n.Ref)
			}
			o.children = append(o.children, n)
		}
	}
	for _, n := range nodes {
		n.sortKey = n.Ref.String()
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].sortKey < nodes[j].sortKey })
	order(g, nodes)
	if g.Count() != len(nodes) {
		return nil, nil, fmt.Errorf("%w: the graph in %s has an ownership cycle", ErrNotBackup, ManifestFile)
	}
	return man, g, nil
}

// FromDirectory restores a backup into dst: the same graph with new UIDs, owners first, without
// status; then lifts the pause capctl set while taking the backup (user pauses are kept).
// Re-running it converges (existing objects are adopted and updated).
func FromDirectory(ctx context.Context, dst *cluster.Client, dir string, opts Options) (*Report, error) {
	opts.defaults()
	start := opts.Now()
	dstReq := dst.Requests()
	rep := &Report{}
	defer func() {
		rep.TargetRequests = dst.Requests() - dstReq
		rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	man, g, err := ReadBackup(dir)
	if err != nil {
		return rep, err
	}
	rep.Graph = g
	rep.Scope = man.Scope
	fillReport(rep, g)
	opts.Log.Info("Restoring a backup", "dir", dir, "objects", g.Count(), "taken", man.Created.Format(time.RFC3339), "from", man.Source.Server)
	if err := Preflight(ctx, nil, dst, g); err != nil {
		return rep, err
	}
	m := &mover{dst: dst, opts: opts, g: g, uids: map[types.UID]types.UID{}}
	if err := m.createAll(ctx); err != nil {
		return rep, fmt.Errorf("%w; %d of %d objects were created (paused); re-run the same restore to complete it", err, m.created.Load()+m.updated.Load(), g.Count())
	}
	rep.Created, rep.Updated = int(m.created.Load()), int(m.updated.Load())
	var ours []*Node
	for _, n := range g.Moved() {
		if _, ok := n.Obj.GetAnnotations()[MovePausedAnnotation]; ok {
			ours = append(ours, n)
		}
	}
	if err := m.unpause(ctx, dst, ours, "target"); err != nil {
		return rep, err
	}
	originals := map[types.UID]*unstructured.Unstructured{}
	for _, n := range g.Moved() {
		originals[n.Ref.UID] = n.Obj
	}
	diffs, err := Verify(ctx, dst, g, originals)
	if err != nil {
		return rep, fmt.Errorf("the restore is complete, but verifying it failed: %w", err)
	}
	rep.Differences = diffs
	if len(diffs) > 0 {
		return rep, fmt.Errorf("%w: %d difference(s)", ErrVerification, len(diffs))
	}
	return rep, nil
}
