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

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
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
// 0600, the objects as they were before the backup) and a manifest. The source is paused while it
// is read and unpaused afterwards (objects the user had paused stay paused). The files are written
// into a sibling folder renamed to dir at the end, so dir only ever holds a complete backup; a
// journal in the source records what was paused, so an interrupted backup is undone by the next
// move or backup (and shown by a dry run).
func ToDirectory(ctx context.Context, src *cluster.Client, dir string, opts Options) (*Report, error) {
	opts.defaults()
	return backup(ctx, src, dir, opts)
}

// backup is ToDirectory with opts already defaulted (Options.defaults).
func backup(ctx context.Context, src *cluster.Client, dir string, opts Options) (*Report, error) {
	start := opts.Now()
	srcReq := src.Requests()
	rep := &Report{}
	defer func() {
		rep.SourceRequests = src.Requests() - srcReq
		rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	opts.Scope = opts.Scope.resolve(src)
	dir, err := filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	srcID, err := ClusterID(ctx, src)
	if err != nil {
		return rep, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	lk, lctx, err := acquireLock(ctx, src, []string{journalNamespace(opts.Scope)}, "backup", dir, opts)
	if err != nil {
		return rep, err
	}
	defer lk.Release(ctx)
	ctx = lctx
	target, err := checkBackupTarget(ctx, dir, opts.Scope, srcID)
	if err != nil {
		return rep, err
	}
	js, err := listJournals(ctx, src)
	if err != nil {
		return rep, err
	}
	for _, j := range js {
		if j.Phase != phaseBackup && j.namespace != journalNamespace(opts.Scope) && overlaps(j, opts.Scope) {
			return rep, fmt.Errorf("%s (journal %s/%s); finish it before backing up %s", j.unfinished(), j.namespace, JournalName, opts.Scope)
		}
		if j.Phase == phaseBackup {
			w, err := settleBackup(ctx, src, j, journalNamespace(opts.Scope), opts)
			if err != nil {
				return rep, err
			}
			rep.Warnings = append(rep.Warnings, w)
		} else if j.namespace == journalNamespace(opts.Scope) {
			return rep, fmt.Errorf("%s; finish it before backing up %s", j.unfinished(), opts.Scope)
		}
	}
	rep.Scope = opts.Scope
	g, err := discoverLocked(ctx, src, opts.Scope, lk, allFieldOwners)
	if err != nil {
		return rep, err
	}
	rep.Warnings = append(rep.Warnings, sanitize(g)...)
	rep.Graph = g
	fillReport(rep, g)
	opts.hook("discover", g.Count())
	if g.Count() == 0 {
		return rep, nothingToMove(opts.Scope, src)
	}
	if p := provisioningProblems(g); len(p) > 0 {
		return rep, fmt.Errorf("cannot start the backup:\n  - %s", strings.Join(p, "\n  - "))
	}
	m := &mover{src: src, opts: opts, g: g, moveID: "backup-" + rand.String(8), uids: map[types.UID]types.UID{}}
	rep.MoveID = m.moveID
	j := &journal{MoveID: m.moveID, Scope: opts.Scope, Source: src.Config.Host, Started: opts.Now().UTC(), Phase: phaseBackup,
		Objects: g.Count(), Paused: pausable(g), Directory: dir}
	if err := writeJournal(ctx, src, j); err != nil {
		return rep, err
	}
	opts.hook("journal", 0)
	partial := partialDir(dir, m.moveID)
	err = m.pauseSource(ctx)
	if err == nil {
		err = WaitBlockMove(ctx, src, g, opts)
	}
	if err == nil {
		rep.Written, err = writeBackup(ctx, partial, g, Manifest{
			APIVersion: ManifestAPIVersion, Kind: ManifestKind, ToolVersion: version.Get().GitVersion,
			Created: opts.Now().UTC(), Scope: opts.Scope, Providers: g.Providers,
			Source: ManifestSource{Server: src.Config.Host, Context: src.ContextName, Kubeconfig: src.KubeconfigPath, ClusterID: srcID},
		}, opts)
	}
	if err == nil {
		// rename(2) replaces an empty directory: dir appears complete or not at all.
		if err = target.install(partial, m.moveID); err != nil {
			err = fmt.Errorf("moving the finished backup into place: %w", err)
		}
	}
	if err != nil {
		_ = os.RemoveAll(partial)
		rep.Written = 0
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if uerr := m.unpause(uctx, src, g.Moved(), "source"); uerr != nil {
		return rep, errors.Join(err, fmt.Errorf("unpausing the source after the backup: %w (the journal %s/%s remembers what is paused: the next capctl move or backup unpauses it)", uerr, j.namespace, JournalName))
	}
	if ferr := finishJournal(uctx, src, j); ferr != nil {
		return rep, errors.Join(err, ferr)
	}
	if err != nil {
		return rep, fmt.Errorf("backup to %s: %w (nothing was written there; the source is unchanged and unpaused)", dir, err)
	}
	return rep, nil
}

// partialDir is where a backup is written before it is renamed into place.
func partialDir(dir, moveID string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".capctl-partial-"+moveID)
}

// settleBackup undoes an interrupted backup recorded in the namespace this run uses (it would
// share its journal); one recorded elsewhere may still be running, so it is only named.
func settleBackup(ctx context.Context, src *cluster.Client, j *journal, ns string, opts Options) (string, error) {
	if j.namespace == ns {
		return undoBackup(ctx, src, j, opts)
	}
	return j.unfinished().String() + " (journal " + j.namespace + "/" + JournalName + ")", nil
}

// undoBackup finishes what an interrupted backup left: it unpauses what the backup paused,
// removes its partial folder and its journal, and says so. opts carry their defaults.
func undoBackup(ctx context.Context, src *cluster.Client, j *journal, opts Options) (string, error) {
	g := &Graph{Nodes: map[types.UID]*Node{}}
	var nodes []*Node
	for _, r := range j.Paused {
		n := &Node{Ref: r, Obj: &unstructured.Unstructured{}}
		n.Obj.SetAPIVersion(r.APIVersion)
		n.Obj.SetKind(r.Kind)
		nodes = append(nodes, n)
	}
	g.Order = [][]*Node{nodes}
	m := &mover{src: src, opts: opts, g: g, moveID: j.MoveID}
	if err := m.unpause(ctx, src, nodes, "source"); err != nil {
		return "", fmt.Errorf("undoing the interrupted backup %s (started %s): %w", j.MoveID, j.Started.Format(time.RFC3339), err)
	}
	if j.Directory != "" {
		_ = os.RemoveAll(partialDir(j.Directory, j.MoveID))
		restorePrevious(j.Directory, j.MoveID)
	}
	if err := finishJournal(ctx, src, j); err != nil {
		return "", err
	}
	opts.Log.Info("Undid an interrupted backup", "moveID", j.MoveID, "directory", j.Directory, "unpaused", len(nodes))
	return fmt.Sprintf("the backup %s of %s to %s (started %s) had been interrupted: the %d Clusters/ClusterClasses it paused were unpaused; nothing was left in %s",
		j.MoveID, j.Scope, j.Directory, j.Started.Format(time.RFC3339), len(nodes), j.Directory), nil
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

// writeBackup writes the files into dir (created 0700) and returns how many objects it wrote.
func writeBackup(ctx context.Context, dir string, g *Graph, man Manifest, opts Options) (int, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, fmt.Errorf("creating the backup directory: %w", err)
	}
	used := map[string]bool{}
	for i, n := range g.Moved() {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		b, err := yaml.Marshal(n.Obj.Object)
		if err != nil {
			return i, fmt.Errorf("encoding %s: %w", n.Ref, err)
		}
		name := fileName(n, used)
		if err := output.WritePrivateFile(filepath.Join(dir, name), b); err != nil {
			return i, err
		}
		opts.hook("write", i+1)
		sum := sha256.Sum256(b)
		man.Objects = append(man.Objects, ManifestObject{
			File: name, Ref: n.Ref, Owners: n.Owners, SoftOwners: n.SoftOwners, Level: n.Level,
			Global: n.Global, UserPaused: n.UserPaused, SHA256: hex.EncodeToString(sum[:]),
		})
	}
	b, err := yaml.Marshal(man)
	if err != nil {
		return 0, err
	}
	// The manifest is written last: a directory without it is an unfinished backup.
	if err := output.WritePrivateFile(filepath.Join(dir, ManifestFile), b); err != nil {
		return 0, err
	}
	return len(man.Objects), nil
}

// ReadBackup reads and checks a backup directory: the manifest, every file it lists with its
// checksum and identity, once, and no file it does not list. Only regular files directly inside
// dir are read, within maxTotal bytes in all (0: DefaultMaxBackupSize) and one input's bound
// each; the read stops when ctx is cancelled. What the objects are is checked against the
// target by CheckRestorable.
func ReadBackup(ctx context.Context, dir string, maxTotal int64) (*Manifest, *Graph, error) {
	br := newBackupReader(ctx, dir, maxTotal)
	b, err := br.read(ManifestFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s has no %s (capctl writes it with `capctl move --to-directory`)", ErrNotBackup, dir, ManifestFile)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	man := &Manifest{}
	if err := userinput.UnmarshalStrict(b, man); err != nil {
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
	if p := append(entryProblems(entries), duplicateProblems(man.Objects)...); len(p) > 0 {
		return nil, nil, fmt.Errorf("%w: %s is refused; nothing was read from it:\n  - %s", ErrNotBackup, dir, strings.Join(p, "\n  - "))
	}
	g := &Graph{Nodes: map[types.UID]*Node{}, Providers: man.Providers}
	var nodes []*Node
	var problems []string
	for _, mo := range man.Objects {
		data, err := br.read(mo.File)
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("reading the backup %s: %w", dir, ctx.Err())
		}
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
		js, err := userinput.YAMLToJSON(data)
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
	return restore(ctx, dst, dir, opts)
}

// restore is FromDirectory with opts already defaulted (Options.defaults).
func restore(ctx context.Context, dst *cluster.Client, dir string, opts Options) (*Report, error) {
	start := opts.Now()
	dstReq := dst.Requests()
	rep := &Report{}
	defer func() {
		rep.TargetRequests = dst.Requests() - dstReq
		rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	man, g, err := ReadBackup(ctx, dir, opts.MaxBackupSize)
	if err != nil {
		return rep, err
	}
	rep.Graph = g
	rep.Scope = man.Scope
	fillReport(rep, g)
	opts.Log.Info("Restoring a backup", "dir", dir, "objects", g.Count(), "taken", man.Created.Format(time.RFC3339), "from", man.Source.Server)
	if err := CheckRestorable(ctx, dst, man, g); err != nil {
		return rep, err
	}
	if rep.Contracts, err = checkContracts(ctx, nil, dst, g); err != nil {
		return rep, err
	}
	tg, err := preflight(ctx, dst, g, opts, rep)
	if err != nil {
		return rep, err
	}
	rep.Warnings = append(rep.Warnings, sanitize(g)...)
	// A restore locks the namespaces it fills (creating them first, as it would anyway).
	if err := ensureNamespaces(ctx, dst, g.Moved()); err != nil {
		return rep, err
	}
	lk, lctx, err := acquireLock(ctx, dst, graphNamespaces(g), "restore", dst.Config.Host+" from "+dir, Options{Scope: man.Scope, LockDuration: opts.LockDuration, Now: opts.Now})
	if err != nil {
		return rep, err
	}
	defer lk.Release(ctx)
	ctx = lctx
	existing, err := listMovedKinds(ctx, dst, tg)
	if err != nil {
		return rep, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	m := &mover{dst: dst, opts: opts, g: g, tg: tg, moveID: "restore-" + rand.String(8), uids: map[types.UID]types.UID{}}
	if err := m.strictDryRun(ctx); err != nil {
		return rep, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	if err := m.converge(ctx, existing); err != nil {
		return rep, fmt.Errorf("%w; %d of %d objects are in the target (paused); re-run the same restore to complete it", err, m.created.Load()+m.updated.Load()+m.present.Load(), g.Count())
	}
	rep.Created, rep.Updated, rep.AlreadyPresent = int(m.created.Load()), int(m.updated.Load()), int(m.present.Load())
	diffs, err := m.verifyTarget(ctx)
	if err != nil {
		return rep, fmt.Errorf("verifying the restore: %w", err)
	}
	rep.Differences = diffs
	if len(diffs) > 0 {
		return rep, fmt.Errorf("%w: %d difference(s); the restored objects stay paused: re-run the same restore to repair them", ErrVerification, len(diffs))
	}
	rep.Verified = true
	if err := m.unpauseTarget(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}
