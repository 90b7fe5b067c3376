package move

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// JournalName is the ConfigMap (in the namespace moved from; "default" for -A) that records an
// unfinished move in the source cluster, so a re-run or `--resume` completes it.
const JournalName = "capctl-move-journal"

const (
	phaseCreating = "creating" // nothing deleted yet: the source is complete
	phaseDeleting = "deleting" // every object exists in the target; deleting from the source
)

type journal struct {
	MoveID   string    `json:"moveID"`
	Scope    Scope     `json:"scope"`
	Source   string    `json:"source"`
	Target   string    `json:"target"`
	TargetID string    `json:"targetID"`
	Started  time.Time `json:"started"`
	Phase    string    `json:"phase"`
	Objects  int       `json:"objects"`
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

func readJournal(ctx context.Context, c client.Client, ns string) (*journal, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: JournalName}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the move journal %s/%s: %w", ns, JournalName, err)
	}
	j := &journal{}
	if err := json.Unmarshal([]byte(cm.Data["journal"]), j); err != nil {
		return nil, fmt.Errorf("the move journal %s/%s is unreadable (%v); delete it only if no move is half done", ns, JournalName, err)
	}
	return j, nil
}

// findJournal looks for the journal of an unfinished move in every namespace (one LIST), for
// --resume. With several, the namespace decides.
func findJournal(ctx context.Context, c client.Client, preferNS string) (*journal, error) {
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list, client.HasLabels{JournalLabel}); err != nil {
		return nil, fmt.Errorf("looking for the journal of an unfinished move: %w", err)
	}
	var found []*journal
	var where []string
	for _, cm := range list.Items {
		if cm.Name != JournalName {
			continue
		}
		j := &journal{}
		if err := json.Unmarshal([]byte(cm.Data["journal"]), j); err != nil {
			return nil, fmt.Errorf("the move journal %s/%s is unreadable (%v); delete it only if no move is half done", cm.Namespace, JournalName, err)
		}
		if cm.Namespace == preferNS {
			return j, nil
		}
		found = append(found, j)
		where = append(where, cm.Namespace+" ("+j.Scope.String()+")")
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("several unfinished moves are recorded, in namespaces %v: pass -n with the one to resume", where)
}

func writeJournal(ctx context.Context, c client.Client, ns string, j *journal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: JournalName, Labels: map[string]string{JournalLabel: ""}},
		Data:       map[string]string{"journal": string(b)},
	}
	err = c.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = c.Update(ctx, cm)
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			existing := &corev1.ConfigMap{}
			if err = c.Get(ctx, client.ObjectKeyFromObject(cm), existing); err == nil {
				existing.Data = cm.Data
				existing.Labels = cm.Labels
				err = c.Update(ctx, existing)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("writing the move journal %s/%s: %w", ns, JournalName, err)
	}
	return nil
}

func finishJournal(ctx context.Context, c client.Client, j *journal) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: journalNamespace(j.Scope), Name: JournalName}}
	if err := c.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("the move is complete but removing its journal %s/%s failed: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}
