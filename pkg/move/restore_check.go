package move

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// A backup is read from files anyone may have crafted: a restore reads regular files only,
// directly inside the backup folder, within bounds, and creates only objects that a move of the
// backup's scope could have created.

// DefaultMaxBackupSize bounds the sum of the files a restore reads (one file is bounded by
// --max-input-size). A backup of a few thousand clusters is well under it.
const DefaultMaxBackupSize int64 = 1 << 30

// MaxBackupSizeFlag raises DefaultMaxBackupSize.
const MaxBackupSizeFlag = "--max-backup-size"

// ErrRefusedObjects is returned when a backup holds objects no move could have produced.
var ErrRefusedObjects = errors.New("the backup holds objects a move never creates")

// backupReader reads the files of one backup folder within a total budget.
type backupReader struct {
	ctx    context.Context
	dir    string
	budget int64 // bytes left
	limit  int64 // the total, for messages
}

func newBackupReader(ctx context.Context, dir string, total int64) *backupReader {
	if total <= 0 {
		total = DefaultMaxBackupSize
	}
	return &backupReader{ctx: ctx, dir: dir, budget: total, limit: total}
}

// read reads the regular file name directly inside the folder. Symlinks are not followed (Lstat,
// then O_NOFOLLOW), FIFOs and devices are refused without being opened for a blocking read, and
// the file may not be larger than one input's bound nor than what is left of the total.
func (r *backupReader) read(name string) ([]byte, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading the backup stopped: %w", err)
	}
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || strings.ContainsAny(name, `/\`) {
		return nil, errors.New("not a plain file name inside the backup folder")
	}
	p := filepath.Join(r.dir, name)
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: a backup holds regular files only", userinput.FileKind(st.Mode()))
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollowFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		return nil, errors.New("replaced while it was read: a backup holds regular files only")
	}
	limit, flag := userinput.Max(), userinput.Flag
	if r.budget < limit {
		limit, flag = r.budget, MaxBackupSizeFlag
	}
	if fst.Size() > limit {
		return nil, r.tooLarge(p, limit, flag)
	}
	b, err := userinput.ReadAllLimit(r.ctx, f, p, limit, flag)
	if userinput.IsTooLarge(err) {
		return nil, r.tooLarge(p, limit, flag)
	}
	if err != nil {
		return nil, err
	}
	r.budget -= int64(len(b))
	return b, nil
}

func (r *backupReader) tooLarge(p string, limit int64, flag string) error {
	if flag == MaxBackupSizeFlag {
		return fmt.Errorf("the backup's files add up to more than %s (the limit of a backup) at %s: raise it with %s if the backup is genuine",
			userinput.Human(r.limit), filepath.Base(p), MaxBackupSizeFlag)
	}
	return &userinput.TooLargeError{Name: filepath.Base(p), Limit: limit, Flag: flag}
}

// entryProblems lists the folder's entries that are not regular files (symlinks, FIFOs, devices,
// sub-folders), whether the manifest lists them or not.
func entryProblems(entries []fs.DirEntry) []string {
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			out = append(out, fmt.Sprintf("%s: %s: a backup holds regular files only", e.Name(), userinput.FileKind(e.Type())))
		}
	}
	return out
}

// duplicateProblems names manifest entries that repeat a file or an object: each object is
// restored once, so a repeated entry is a crafted or damaged manifest, not a bigger backup.
func duplicateProblems(objs []ManifestObject) []string {
	var out []string
	files := map[string]int{}
	refs := map[string]string{}
	uids := map[string]string{}
	for _, o := range objs {
		files[o.File]++
		if files[o.File] == 2 {
			out = append(out, fmt.Sprintf("%s: listed more than once in %s", o.File, ManifestFile))
		}
		if files[o.File] > 1 {
			continue
		}
		gv, _ := schema.ParseGroupVersion(o.Ref.APIVersion)
		k := gv.Group + "/" + o.Ref.Kind + "/" + o.Ref.Namespace + "/" + o.Ref.Name
		if f, ok := refs[k]; ok {
			out = append(out, fmt.Sprintf("%s: holds %s, which %s holds too", o.File, o.Ref, f))
		} else {
			refs[k] = o.File
		}
		if o.Ref.UID == "" {
			out = append(out, fmt.Sprintf("%s: %s has no uid (every object of a backup has one)", o.File, o.Ref))
		} else if f, ok := uids[string(o.Ref.UID)]; ok {
			out = append(out, fmt.Sprintf("%s: has the uid %s of %s", o.File, o.Ref.UID, f))
		} else {
			uids[string(o.Ref.UID)] = o.File
		}
	}
	return out
}

// CheckRestorable refuses, before any write, a backup holding objects that a move of the
// manifest's scope would not have created in the target dst: kinds outside the move graph,
// objects outside the scope's namespace, objects the graph would not move. It is the same rule
// as a move's (DiscoverTypes on the target, then BuildGraph over the backup's objects), so a
// restore creates exactly what a move would.
func CheckRestorable(ctx context.Context, dst *cluster.Client, man *Manifest, g *Graph) error {
	types, err := DiscoverTypes(ctx, dst)
	if err != nil {
		return fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	providers, err := inventory.List(ctx, dst)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	return restorableProblems(man, g, types, providers)
}

// restorableProblems is CheckRestorable's pure part.
func restorableProblems(man *Manifest, g *Graph, types []TypeInfo, providers []inventory.Provider) error {
	scope := man.Scope
	if !scope.AllNamespaces && scope.Namespace == "" {
		return fmt.Errorf("%w: %s names no namespace and not all namespaces", ErrNotBackup, ManifestFile)
	}
	typeByGK := map[schema.GroupKind]TypeInfo{}
	for _, t := range types {
		typeByGK[t.GVK.GroupKind()] = t
	}
	// A move of one namespace also lists Secrets in the infrastructure providers' namespaces
	// (identities owned by cluster-wide objects); the target's inventory says which they are.
	secretNS := map[string]bool{}
	for _, p := range providers {
		if p.Type == provider.InfrastructureProviderType {
			secretNS[p.Namespace] = true
		}
	}
	file := map[string]string{}
	for _, mo := range man.Objects {
		file[string(mo.Ref.UID)] = mo.File
	}
	// A namespace's backup holds the ClusterClasses its Clusters use from other namespaces, with
	// their templates (the move copies them along): they are not outside the backup.
	shared := map[string]bool{}
	if !scope.AllNamespaces {
		for _, n := range g.Nodes {
			if cns, name := classRef(n.Obj); isClusterNode(n) && n.Ref.Namespace == scope.Namespace && name != "" && cns != scope.Namespace {
				shared[key("ClusterClass", cns, name)] = true
			}
		}
		for _, n := range g.Nodes {
			if isClusterClassNode(n) && shared[key(n.Ref.Kind, n.Ref.Namespace, n.Ref.Name)] {
				walkTemplateRefs(n.Obj.Object["spec"], func(kind, name string) { shared[key(kind, n.Ref.Namespace, name)] = true })
			}
		}
	}
	refused := map[string]string{} // file → reason
	var candidates []unstructured.Unstructured
	for _, n := range g.Nodes {
		gk := n.Obj.GroupVersionKind().GroupKind()
		t, ok := typeByGK[gk]
		ns := n.Obj.GetNamespace()
		switch {
		case !ok:
			refused[file[string(n.Ref.UID)]] = fmt.Sprintf("%s %s is not a kind a move copies (Cluster API kinds and kinds labelled %s in the target, Secrets and ConfigMaps)", gk, objectName(n.Obj), MoveLabel)
		case !t.Namespaced && ns != "":
			refused[file[string(n.Ref.UID)]] = fmt.Sprintf("%s %s is cluster-scoped but names namespace %s", gk, n.Obj.GetName(), ns)
		case t.Namespaced && ns == "":
			refused[file[string(n.Ref.UID)]] = fmt.Sprintf("%s %s names no namespace", gk, n.Obj.GetName())
		case t.Namespaced && !scope.AllNamespaces && ns != scope.Namespace && !(gk.Group == "" && gk.Kind == "Secret" && secretNS[ns]) && !shared[key(gk.Kind, ns, n.Obj.GetName())]:
			refused[file[string(n.Ref.UID)]] = fmt.Sprintf("%s %s is outside the backup's namespace %s", gk, objectName(n.Obj), scope.Namespace)
		default:
			candidates = append(candidates, *n.Obj.DeepCopy())
		}
	}
	rebuilt, err := BuildGraph(candidates, types, scope)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefusedObjects, err)
	}
	reasons := map[string]string{}
	for _, e := range rebuilt.Excluded {
		reasons[string(e.Object.UID)] = e.Reason
	}
	for i := range candidates {
		u := string(candidates[i].GetUID())
		if n := rebuilt.Nodes[candidates[i].GetUID()]; n != nil && n.Level >= 0 {
			continue
		}
		why := reasons[u]
		if why == "" {
			why = "a move of " + scope.String() + " would not move it"
			if n := rebuilt.Nodes[candidates[i].GetUID()]; n != nil {
				why = notMovedReason(n)
			}
		}
		refused[file[u]] = fmt.Sprintf("%s %s: %s", candidates[i].GetKind(), objectName(&candidates[i]), why)
	}
	if len(refused) == 0 {
		return nil
	}
	lines := make([]string, 0, len(refused))
	for f, why := range refused {
		lines = append(lines, f+": "+why)
	}
	sort.Strings(lines)
	return fmt.Errorf("%w (%d of %d files); nothing was written to the target:\n  - %s", ErrRefusedObjects, len(lines), len(g.Nodes), strings.Join(lines, "\n  - "))
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
