package move

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/authz"
)

// JournalName is the ConfigMap (in the namespace moved from; "default" for -A) that records an
// unfinished move or backup in the source cluster, so a re-run or `--resume` completes or undoes
// it. The copy of the objects as they were before the move lives beside it in Secrets named
// JournalName-0, JournalName-1, ... (Secrets, because the copy holds the moved Secrets' data).
const JournalName = "capctl-move-journal"

// journalDataLabel marks the Secrets holding a journal's copy of the objects (value: the move ID).
const journalDataLabel = "capctl.cluster.x-k8s.io/move-journal-data"

// journalChunk bounds one journal Secret's data (etcd refuses requests over 1.5 MiB).
const journalChunk = 768 << 10

const (
	phaseCreating = "creating" // nothing deleted yet: the source is complete
	phaseDeleting = "deleting" // every object exists in the target and matched the copy; deleting from the source
	phaseBackup   = "backup"   // a --to-directory backup is under way: the source is paused, nothing else changed
)

type journal struct {
	MoveID   string    `json:"moveID"`
	Scope    Scope     `json:"scope"`
	Source   string    `json:"source"`
	Target   string    `json:"target,omitempty"`
	TargetID string    `json:"targetID,omitempty"` // UID of the target's kube-system namespace
	Started  time.Time `json:"started"`
	Phase    string    `json:"phase"`
	Objects  int       `json:"objects"`
	// Paused lists the Clusters and ClusterClasses this move paused in the source.
	Paused []Ref `json:"paused,omitempty"`
	// Directory is the folder a backup writes (phase backup).
	Directory string `json:"directory,omitempty"`
	// DataSecrets and DataSHA256 describe the copy of the objects (phase deleting needs it).
	// Contracts of the two sides, and the values the conversion to the target's versions lost
	// (accepted with --accept-conversion-loss), by object and path.
	Contracts        Contracts `json:"contracts"`
	ConversionLosses []string  `json:"conversionLosses,omitempty"`
	DataSecrets      int       `json:"dataSecrets,omitempty"`
	DataSHA256       string    `json:"dataSHA256,omitempty"`

	namespace string
}

// Unfinished describes a move or backup recorded in a cluster's journal, for dry runs and errors.
type Unfinished struct {
	MoveID    string    `json:"moveID"`
	Namespace string    `json:"namespace"`
	Scope     Scope     `json:"scope"`
	Phase     string    `json:"phase"`
	Started   time.Time `json:"started"`
	Target    string    `json:"target,omitempty"`
	Directory string    `json:"directory,omitempty"`
	Paused    int       `json:"paused"`
}

func (u Unfinished) String() string {
	if u.Phase == phaseBackup {
		return fmt.Sprintf("an interrupted backup (%s, started %s) of %s to %s left %d Clusters/ClusterClasses paused; the next capctl move or backup of that namespace unpauses them",
			u.MoveID, u.Started.Format(time.RFC3339), u.Scope, u.Directory, u.Paused)
	}
	state := "nothing deleted from the source yet"
	if u.Phase == phaseDeleting {
		state = "every object is in the target; the source is partly deleted"
	}
	way := "finish it with `capctl move --resume --to-kubeconfig <target>`"
	if u.Phase != phaseDeleting {
		way += ", or undo it with `capctl move --abandon --to-kubeconfig <target>`"
	}
	return fmt.Sprintf("an unfinished move (%s, started %s, phase %s: %s) of %s to %s; %s",
		u.MoveID, u.Started.Format(time.RFC3339), u.Phase, state, u.Scope, u.Target, way)
}

func (j *journal) unfinished() Unfinished {
	return Unfinished{MoveID: j.MoveID, Namespace: j.namespace, Scope: j.Scope, Phase: j.Phase, Started: j.Started, Target: j.Target, Directory: j.Directory, Paused: len(j.Paused)}
}

func journalNamespace(s Scope) string {
	if s.AllNamespaces || s.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return s.Namespace
}

func sameScope(a, b Scope) bool {
	if a.AllNamespaces != b.AllNamespaces || (!a.AllNamespaces && a.Namespace != b.Namespace) || len(a.Clusters) != len(b.Clusters) {
		return false
	}
	x, y := append([]string{}, a.Clusters...), append([]string{}, b.Clusters...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// listJournals reads every journal of the cluster (one LIST of labelled ConfigMaps).
func listJournals(ctx context.Context, c client.Reader) ([]*journal, error) {
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list, client.HasLabels{JournalLabel}); err != nil {
		if authz.Tolerable(err) {
			// Without it the move cannot know whether another, unfinished move holds the namespace.
			return nil, fmt.Errorf("looking for the journal of an unfinished move: %w",
				&authz.IncompleteError{Command: "capctl move", Unreadable: []authz.Unreadable{authz.NewUnreadable("configmaps", "", "list", err)}})
		}
		return nil, fmt.Errorf("looking for the journal of an unfinished move: %w", err)
	}
	var out []*journal
	for _, cm := range list.Items {
		if cm.Name != JournalName {
			continue
		}
		j := &journal{}
		if err := json.Unmarshal([]byte(cm.Data["journal"]), j); err != nil {
			return nil, fmt.Errorf("the move journal %s/%s is unreadable (%v); delete it only if no move is half done", cm.Namespace, JournalName, err)
		}
		j.namespace = cm.Namespace
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].namespace < out[b].namespace })
	return out, nil
}

// PendingMoves lists the unfinished moves and backups recorded in c (a dry run shows them).
func PendingMoves(ctx context.Context, c client.Reader) ([]Unfinished, error) {
	js, err := listJournals(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []Unfinished
	for _, j := range js {
		out = append(out, j.unfinished())
	}
	return out, nil
}

func writeJournal(ctx context.Context, c client.Client, j *journal) error {
	if j.namespace == "" {
		j.namespace = journalNamespace(j.Scope)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.namespace, Name: JournalName, Labels: map[string]string{JournalLabel: ""}},
		Data:       map[string]string{"journal": string(b)},
	}
	if err := createOrUpdate(ctx, c, cm, func(existing client.Object) {
		e := existing.(*corev1.ConfigMap)
		e.Data, e.Labels = cm.Data, cm.Labels
	}); err != nil {
		return fmt.Errorf("writing the move journal %s/%s: %w", j.namespace, JournalName, err)
	}
	return nil
}

// createOrUpdate creates obj, or updates the existing object through set.
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, set func(existing client.Object)) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return err
	}
	set(existing)
	return c.Update(ctx, existing)
}

// finishJournal removes the journal: the ConfigMap first (a journal without its data is never
// read again: its data Secrets are orphans a later move removes), then the data Secrets.
func finishJournal(ctx context.Context, c client.Client, j *journal) error {
	ns := j.namespace
	if ns == "" {
		ns = journalNamespace(j.Scope)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: JournalName}}
	if err := c.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("the move is complete but removing its journal %s/%s failed: %w", ns, JournalName, err)
	}
	if j.DataSecrets > 0 {
		if err := c.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(ns), client.HasLabels{journalDataLabel}); err != nil {
			return fmt.Errorf("the move is complete but removing its journal's copy (Secrets %s-*) in %s failed: %w", JournalName, ns, err)
		}
	}
	return nil
}

// snapshotEntry is one object of the journal's copy: the object as it was before the move and
// its place in the graph.
type snapshotEntry struct {
	Object       map[string]any `json:"object"`
	Owners       []types.UID    `json:"owners,omitempty"`
	SoftOwners   []types.UID    `json:"softOwners,omitempty"`
	Level        int            `json:"level"`
	Cluster      string         `json:"cluster,omitempty"`
	Global       bool           `json:"global,omitempty"`
	KeepInSource bool           `json:"keepInSource,omitempty"`
	UserPaused   bool           `json:"userPaused,omitempty"`
}

// writeSnapshot stores the graph's objects (as they were before the move) in the journal's data
// Secrets and records their number and digest in j (the caller writes j afterwards, so a
// journal never names data that was not completely written).
func writeSnapshot(ctx context.Context, c client.Client, j *journal, g *Graph) error {
	entries := make([]snapshotEntry, 0, g.Count())
	for _, n := range g.Moved() {
		// The move's graph holds only the field owners a move restores (restoredFieldOwners).
		entries = append(entries, snapshotEntry{Object: n.Obj.Object, Owners: n.Owners, SoftOwners: n.SoftOwners, Level: n.Level,
			Cluster: n.Cluster, Global: n.Global, KeepInSource: n.KeepInSource, UserPaused: n.UserPaused})
	}
	// One entry at a time into the gzip stream: the uncompressed copy (about 150 MiB at 28,000
	// objects) is never held whole, only its compressed bytes.
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	sep := []byte("[")
	for i := range entries {
		b, err := json.Marshal(&entries[i])
		if err != nil {
			return fmt.Errorf("encoding the journal's copy of %s: %w", g.Moved()[i].Ref, err)
		}
		_, _ = zw.Write(sep) // a bytes.Buffer does not fail
		_, _ = zw.Write(b)
		sep = []byte(",")
	}
	if len(entries) == 0 {
		_, _ = zw.Write(sep)
	}
	_, _ = zw.Write([]byte("]\n"))
	if err := zw.Close(); err != nil {
		return err
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	ns := journalNamespace(j.Scope)
	chunks := 0
	for off := 0; off < len(data) || chunks == 0; off += journalChunk {
		part := data[off:min(off+journalChunk, len(data))]
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: JournalName + "-" + strconv.Itoa(chunks),
				Labels: map[string]string{JournalLabel: "", journalDataLabel: j.MoveID}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"objects.json.gz": part},
		}
		if err := createOrUpdate(ctx, c, s, func(existing client.Object) {
			e := existing.(*corev1.Secret)
			e.Data, e.Labels = s.Data, s.Labels
		}); err != nil {
			return fmt.Errorf("writing the journal's copy of the objects (Secret %s/%s): %w", ns, s.Name, err)
		}
		chunks++
	}
	j.DataSecrets, j.DataSHA256 = chunks, hex.EncodeToString(sum[:])
	return nil
}

// maxJournalObjects bounds the uncompressed copy of the objects a journal holds: 28,000 objects
// (1,000 clusters) take about 150 MiB.
var maxJournalObjects int64 = 1 << 30 // a variable only so a test can lower it

// readSnapshot rebuilds the graph from the journal's copy, checking its digest.
func readSnapshot(ctx context.Context, c client.Reader, j *journal) (*Graph, error) {
	if j.DataSecrets == 0 {
		return nil, fmt.Errorf("the move journal %s/%s (move %s) holds no copy of the objects", j.namespace, JournalName, j.MoveID)
	}
	var data []byte
	for i := range j.DataSecrets {
		s := &corev1.Secret{}
		name := JournalName + "-" + strconv.Itoa(i)
		if err := c.Get(ctx, client.ObjectKey{Namespace: j.namespace, Name: name}, s); err != nil {
			return nil, fmt.Errorf("reading the journal's copy of the objects (Secret %s/%s): %w", j.namespace, name, err)
		}
		data = append(data, s.Data["objects.json.gz"]...)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != j.DataSHA256 {
		return nil, fmt.Errorf("the journal's copy of the objects (Secrets %s/%s-*) does not match its digest: it was changed or only partly written", j.namespace, JournalName)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading the journal's copy of the objects: %w", err)
	}
	// Decoded one entry at a time, bounded: the Secrets are only as trustworthy as who may write
	// them, and a few kilobytes of gzip can expand without end.
	dec := json.NewDecoder(userinput.NewLimitReader(ctx, zr, "the journal's copy of the objects", maxJournalObjects, ""))
	bad := func(err error) error {
		if userinput.IsTooLarge(err) {
			return fmt.Errorf("the journal's copy of the objects (Secrets %s/%s-*) expands past %s: no move writes a copy this large, so it is not the journal of a move and is not trusted",
				j.namespace, JournalName, userinput.Human(maxJournalObjects))
		}
		return fmt.Errorf("decoding the journal's copy of the objects: %w", err)
	}
	if t, err := dec.Token(); err != nil {
		return nil, bad(err)
	} else if t != json.Delim('[') {
		return nil, bad(fmt.Errorf("it is not a list of objects"))
	}
	g := &Graph{Nodes: make(map[types.UID]*Node, min(max(j.Objects, 0), 1<<16))}
	for dec.More() {
		var e struct {
			snapshotEntry
			Object json.RawMessage `json:"object"` // decoded by unstructured: integers stay integers
		}
		if err := dec.Decode(&e); err != nil {
			return nil, bad(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(e.Object); err != nil {
			return nil, bad(err)
		}
		if e.Level < 0 || e.Level > maxSnapshotLevel {
			return nil, bad(fmt.Errorf("%s %s has level %d, which no move writes", u.GetKind(), u.GetName(), e.Level))
		}
		gvk := u.GroupVersionKind()
		n := &Node{Obj: u, Ref: Ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()},
			Owners: e.Owners, SoftOwners: e.SoftOwners, Level: e.Level, Cluster: e.Cluster, Global: e.Global, KeepInSource: e.KeepInSource,
			UserPaused: e.UserPaused, inMove: true, sortKey: ""}
		n.sortKey = n.Ref.String()
		g.Nodes[n.Ref.UID] = n
		for len(g.Order) <= n.Level {
			g.Order = append(g.Order, nil)
		}
		g.Order[n.Level] = append(g.Order[n.Level], n)
	}
	if t, err := dec.Token(); err != nil {
		return nil, bad(err)
	} else if t != json.Delim(']') {
		return nil, bad(fmt.Errorf("it does not end where its list does"))
	}
	return g, nil
}

// maxSnapshotLevel bounds an entry's level (its depth in the owner graph) read from a journal:
// Cluster API's deepest chains are a few levels, and each level costs a slot of the order.
const maxSnapshotLevel = 1 << 10

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
