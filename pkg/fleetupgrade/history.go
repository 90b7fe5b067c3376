package fleetupgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/output"
)

// HistoryRequest is `capctl upgrade history [NAME]`: every recorded rollout of the management
// cluster, newest first, or the one named.
type HistoryRequest struct {
	Name string
}

// UnreadableRecordsError is History's answer when some labelled ConfigMaps hold no readable
// record (another writer, a forged or cut record): the records that could be read are returned
// with it, so the history is a partial view (exit 3), never hidden by one bad record.
type UnreadableRecordsError struct {
	// Records are "ConfigMap NAMESPACE/NAME: why", sorted.
	Records []string
}

func (e *UnreadableRecordsError) Error() string {
	return fmt.Sprintf("%d rollout record(s) could not be read, so this history is partial:\n  %s", len(e.Records), strings.Join(e.Records, "\n  "))
}

// History reads the audit records the fleet apply wrote in AuditNamespace. A record that cannot
// be read does not hide the others: they are returned with an *UnreadableRecordsError naming it.
// Every string of a record is made printable (output.Printable): a record is text anyone who
// can write ConfigMaps there could have written.
func History(ctx context.Context, c client.Reader, req HistoryRequest) ([]RolloutRecord, error) {
	if req.Name != "" {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: AuditNamespace, Name: req.Name}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("no rollout %s is recorded in namespace %s: `capctl upgrade history` lists them", output.Printable(req.Name), AuditNamespace)
			}
			return nil, fmt.Errorf("reading the rollout record %s/%s: %w", AuditNamespace, output.Printable(req.Name), err)
		}
		rec, err := decodeRecord(cm)
		if err != nil {
			return nil, err
		}
		return []RolloutRecord{rec}, nil
	}
	list := &corev1.ConfigMapList{}
	if err := c.List(ctx, list, client.InNamespace(AuditNamespace), client.MatchingLabels{AuditLabel: auditLabelKind}); err != nil {
		return nil, fmt.Errorf("listing the rollout records in namespace %s: %w", AuditNamespace, err)
	}
	out := []RolloutRecord{}
	bad := &UnreadableRecordsError{}
	for i := range list.Items {
		rec, err := decodeRecord(&list.Items[i])
		if err != nil {
			bad.Records = append(bad.Records, err.Error())
			continue
		}
		out = append(out, rec)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].Name > out[j].Name
	})
	if len(bad.Records) > 0 {
		sort.Strings(bad.Records)
		return out, bad
	}
	return out, nil
}

// recordMax bounds one record's text: a record of thousands of clusters is a few hundred KiB,
// and a ConfigMap holds at most 1 MiB.
const recordMax = 1 << 20

func decodeRecord(cm *corev1.ConfigMap) (RolloutRecord, error) {
	var rec RolloutRecord
	where := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, output.Printable(cm.Name))
	data, ok := cm.Data[auditDataKey]
	if !ok {
		return rec, fmt.Errorf("%s is labelled %s but holds no %s", where, AuditLabel, auditDataKey)
	}
	if len(data) > recordMax {
		return rec, fmt.Errorf("%s: the rollout record is larger than %d bytes", where, recordMax)
	}
	// Decoded once as plain JSON to make every string printable, then into the record.
	var raw any
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return rec, fmt.Errorf("%s: the rollout record is not readable: %v", where, err)
	}
	clean, err := json.Marshal(printableStrings(raw))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(clean, &rec); err != nil {
		return rec, fmt.Errorf("%s: the rollout record is not readable: %v", where, err)
	}
	return rec, nil
}

// printableStrings applies output.Printable to every string (keys included) of a decoded JSON
// value.
func printableStrings(v any) any {
	switch x := v.(type) {
	case string:
		return output.Printable(x)
	case []any:
		for i := range x {
			x[i] = printableStrings(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[output.Printable(k)] = printableStrings(e)
		}
		return m
	}
	return v
}

// count is how many of the record's clusters have each result.
func (r RolloutRecord) count() map[string]int {
	n := map[string]int{}
	for _, w := range r.Waves {
		for _, c := range w.Clusters {
			n[c.Result]++
		}
	}
	return n
}

// RenderHistory prints the records as a table, newest first.
func RenderHistory(w io.Writer, recs []RolloutRecord) error {
	if len(recs) == 0 {
		_, err := fmt.Fprintf(w, "No rollout is recorded in namespace %s.\n", AuditNamespace)
		return err
	}
	t := output.NewTable(w, "NAME", "STARTED", "USER", "VERSION", "STATE", "WAVES", "CLUSTERS", "PLAN")
	for _, r := range recs {
		started := 0
		for _, wv := range r.Waves {
			if wv.Started != nil {
				started++
			}
		}
		n := r.count()
		total := 0
		for _, v := range n {
			total += v
		}
		clusters := fmt.Sprintf("%d upgraded, %d up to date, %d failed of %d", n[ResultUpgraded], n[ResultUpToDate], n[ResultFailed], total)
		if r.ClassRebase != "" {
			clusters = fmt.Sprintf("%d rebased, %d up to date, %d failed of %d", n[ResultRebased], n[ResultUpToDate], n[ResultFailed], total)
		}
		if r.RolloutAfter != "" {
			clusters = fmt.Sprintf("%d rotated, %d up to date, %d failed of %d", n[ResultRotated], n[ResultUpToDate], n[ResultFailed], total)
		}
		t.Row(r.Name, r.Started.Format(time.RFC3339), r.User, r.change(), r.State, fmt.Sprintf("%d/%d", started, len(r.Waves)), clusters, shortDigest(r.PlanDigest))
	}
	return t.Flush()
}

func shortDigest(d string) string {
	if d == "" {
		return "-"
	}
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// RenderRecord prints one record: who, when, the plan, then each wave with its times, gates and
// clusters.
func RenderRecord(w io.Writer, r RolloutRecord) error {
	fmt.Fprintf(w, "Rollout:    %s\n", r.Name)
	fmt.Fprintf(w, "User:       %s", r.User)
	if len(r.Groups) > 0 {
		fmt.Fprintf(w, " (groups %s)", strings.Join(r.Groups, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Started:    %s\n", r.Started.Format(time.RFC3339))
	if r.Finished != nil {
		fmt.Fprintf(w, "Finished:   %s\n", r.Finished.Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "Updated:    %s (not finished: still running, or the run was killed then)\n", r.Updated.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "State:      %s\n", r.State)
	if r.RolloutAfter != "" {
		fmt.Fprintf(w, "Rotation:   rollout.after %s\n", r.RolloutAfter)
	} else if r.ClassRebase != "" {
		fmt.Fprintf(w, "Rebase:     ClusterClass %s\n", r.ClassRebase)
	} else {
		fmt.Fprintf(w, "Version:    %s\n", r.KubernetesVersion)
	}
	if r.PlanDigest != "" {
		fmt.Fprintf(w, "Plan:       %s\n", r.PlanDigest)
	}
	if s := r.Stop; s != nil {
		fmt.Fprintf(w, "Stopped:    %s (%s): %s\n", s.At, s.Gate, s.Reason)
		for _, d := range s.Details {
			fmt.Fprintf(w, "  - %s\n", d)
		}
	}
	for _, wv := range r.Waves {
		fmt.Fprintf(w, "\nWave %s: %s\n", wv.Wave, span(wv.Started, wv.Finished))
		for _, g := range wv.Gates {
			verdict := "passed"
			if !g.Passed {
				verdict = "did not pass: " + g.Reason
			}
			fmt.Fprintf(w, "  %s %s (%.0fs)\n", g.Gate, verdict, g.Seconds)
		}
		multi := false
		for _, c := range wv.Clusters {
			multi = multi || c.ManagementCluster != ""
		}
		header := []string{"CLUSTER", "RESULT", "STEP", "REASON"}
		if multi {
			header = append([]string{"MANAGEMENT"}, header...)
		}
		t := output.NewTable(w, header...)
		for _, c := range wv.Clusters {
			row := []string{c.Namespace + "/" + c.Name, c.Result, orDash(c.Step), orDash(c.Reason)}
			if multi {
				row = append([]string{c.ManagementCluster}, row...)
			}
			t.Row(row...)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func span(start, end *time.Time) string {
	switch {
	case start == nil:
		return "not started"
	case end == nil:
		return start.Format(time.RFC3339) + " to (not finished)"
	}
	return fmt.Sprintf("%s to %s (%s)", start.Format(time.RFC3339), end.Format(time.RFC3339), end.Sub(*start).Round(time.Second))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// change is what the run changed, as the history lists it: the Kubernetes version, or the
// rotation's time.
func (r RolloutRecord) change() string {
	if r.RolloutAfter != "" {
		return "rotate@" + r.RolloutAfter
	}
	if r.ClassRebase != "" {
		return "rebase " + strings.ReplaceAll(r.ClassRebase, " ", "")
	}
	return r.KubernetesVersion
}
