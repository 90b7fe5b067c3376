package fleetupgrade

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string, labels map[string]string, fields map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(2)}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func cond(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": typ + status}
}

// settled is a non-topology cluster at v1.34.1 as the controllers report it when done.
func settled() ClusterState {
	cl := obj("Cluster", "c1", nil, map[string]any{"status": map[string]any{"conditions": []any{cond("Available", "True")}}})
	cp := obj("KubeadmControlPlane", "c1-cp", nil, map[string]any{
		"spec":   map[string]any{"version": "v1.34.1", "replicas": int64(1)},
		"status": map[string]any{"version": "v1.34.1", "replicas": int64(1), "upToDateReplicas": int64(1), "observedGeneration": int64(2)},
	})
	md := obj("MachineDeployment", "c1-md", nil, map[string]any{
		"spec":   map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"version": "v1.34.1"}}},
		"status": map[string]any{"replicas": int64(2), "upToDateReplicas": int64(2), "observedGeneration": int64(2)},
	})
	m := func(name string, l map[string]string) unstructured.Unstructured {
		return obj("Machine", name, l, map[string]any{"spec": map[string]any{"version": "v1.34.1"}, "status": map[string]any{"conditions": []any{cond("UpToDate", "True")}}})
	}
	return ClusterState{
		Cluster: &cl, ControlPlane: &cp, Workers: []unstructured.Unstructured{md},
		Machines: []unstructured.Unstructured{
			m("cp-1", map[string]string{controlPlaneMachineLabel: ""}),
			m("md-1", map[string]string{deploymentNameLabel: "c1-md"}), m("md-2", map[string]string{deploymentNameLabel: "c1-md"}),
		},
	}
}

func TestStepDone(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(s *ClusterState)
		component string
		version   string
		want      string // "" means done
	}{
		{"settled control plane step", func(*ClusterState) {}, ControlPlane, "v1.34.1", ""},
		{"settled workers step", func(*ClusterState) {}, Workers, "v1.34.1", ""},
		{"control plane not patched yet", func(*ClusterState) {}, ControlPlane, "v1.35.0", "KubeadmControlPlane c1-cp spec.version is v1.34.1, not v1.35.0"},
		{"workers not patched yet", func(*ClusterState) {}, Workers, "v1.35.0", "MachineDeployment c1-md template version is v1.34.1"},
		{"control plane still rolling", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, int64(0), "status", "upToDateReplicas")
		}, ControlPlane, "v1.35.0", "reports version v1.34.1, wants v1.35.0"},
		{"old control plane machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
		}, ControlPlane, "v1.35.0", "Machine cp-1 runs v1.34.1, wants v1.35.0"},
		{"status from an older generation", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, int64(1), "status", "observedGeneration")
		}, ControlPlane, "v1.34.1", "has not observed its latest spec yet"},
		{"cluster not available", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{map[string]any{"type": "Available", "status": "False", "message": "* ControlPlaneAvailable: not yet"}}, "status", "conditions")
		}, ControlPlane, "v1.34.1", "Cluster Available is False: * ControlPlaneAvailable: not yet"},
		{"availability not reported", func(s *ClusterState) { delete(s.Cluster.Object, "status") }, ControlPlane, "v1.34.1", "Available is not reported yet"},
		{"worker not up to date", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Machines[2].Object, []any{cond("UpToDate", "False")}, "status", "conditions")
		}, Workers, "v1.34.1", "Machine md-2 UpToDate is False: UpToDateFalse"},
		{"a replica missing", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Workers[0].Object, int64(1), "status", "replicas")
		}, Workers, "v1.34.1", "MachineDeployment c1-md has 1 replicas, wants 2"},
		{"machine being deleted", func(s *ClusterState) { s.Machines[1].SetDeletionTimestamp(&metaNow) }, Workers, "v1.34.1", "Machine md-1 is being deleted"},
		{"topology version not set", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
		}, ControlPlane, "v1.35.0", "Cluster spec.topology.version is v1.34.1, not v1.35.0"},
		{"topology settled includes workers", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "True"), cond("TopologyReconciled", "True")}, "status", "conditions")
		}, ControlPlane, "v1.34.1", ""},
		{"topology controller still propagating", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "True"),
				map[string]any{"type": "TopologyReconciled", "status": "False", "message": "Cluster is upgrading to v1.34.1"}}, "status", "conditions")
		}, ControlPlane, "v1.34.1", "Cluster TopologyReconciled is False: Cluster is upgrading to v1.34.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := settled()
			tc.mutate(&s)
			done, why := StepDone(s, tc.component, tc.version)
			if tc.want == "" {
				if !done {
					t.Fatalf("not done: %q", why)
				}
				return
			}
			if done {
				t.Fatalf("done, want not done because %q", tc.want)
			}
			if !strings.Contains(strings.Join(why, "\n"), tc.want) {
				t.Errorf("reasons %q\nwant one containing %q", why, tc.want)
			}
		})
	}
}

var metaNow = metav1.Now()

func TestRolloutUnderWay(t *testing.T) {
	topology := func(v string) func(s *ClusterState) {
		return func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": v}, "spec", "topology")
		}
	}
	cases := []struct {
		name      string
		mutate    func(s *ClusterState)
		component string
		version   string
	}{
		{"settled", func(*ClusterState) {}, "", ""},
		{"settled topology", topology("v1.34.1"), "", ""},
		{"not Available and scaling up is no version change", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "False")}, "status", "conditions")
			_ = unstructured.SetNestedField(s.Workers[0].Object, int64(3), "spec", "replicas")
		}, "", ""},
		{"control plane set, not reported yet", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
		}, ControlPlane, "v1.35.0"},
		{"control plane reported, its old machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
		}, ControlPlane, "v1.35.0"},
		{"topology set, the control plane not told yet", topology("v1.35.0"), ControlPlane, "v1.35.0"},
		{"topology: control plane done, workers not told yet", func(s *ClusterState) {
			topology("v1.35.0")(s)
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
			_ = unstructured.SetNestedField(s.Machines[0].Object, "v1.35.0", "spec", "version")
		}, Workers, "v1.35.0"},
		{"workers set, an old worker machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Workers[0].Object, "v1.35.0", "spec", "template", "spec", "version")
			_ = unstructured.SetNestedField(s.Machines[1].Object, "v1.35.0", "spec", "version")
		}, Workers, "v1.35.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := settled()
			tc.mutate(&s)
			if c, v := RolloutUnderWay(s); c != tc.component || v != tc.version {
				t.Errorf("RolloutUnderWay = %q %q, want %q %q", c, v, tc.component, tc.version)
			}
		})
	}
}

// chainState is a managed-topology cluster (one control-plane Machine, a MachineDeployment of two)
// as the controllers report it during a chained upgrade: the control plane is asked cpSpec and
// its Machine runs cpRuns, the workers are asked wSpec and run wRuns (a Machine is UpToDate when
// it runs what is asked), and the topology controller's status lists cpPlan and wPlan.
func chainState(topo, cpSpec, cpRuns, wSpec, wRuns string, cpPlan, wPlan []string) ClusterState {
	s := settled()
	_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": topo}, "spec", "topology")
	plan := func(vs []string) []any {
		var out []any
		for _, v := range vs {
			out = append(out, map[string]any{"version": v})
		}
		return out
	}
	status := map[string]any{"conditions": []any{cond("Available", "True"), cond("TopologyReconciled", "True")}}
	if topo != cpSpec || topo != wSpec || cpSpec != cpRuns || wSpec != wRuns {
		status["conditions"] = []any{cond("Available", "True"), cond("TopologyReconciled", "False")}
	}
	if len(cpPlan) > 0 {
		status["controlPlane"] = map[string]any{"upgradePlan": plan(cpPlan)}
	}
	if len(wPlan) > 0 {
		status["workers"] = map[string]any{"upgradePlan": plan(wPlan)}
	}
	s.Cluster.Object["status"] = status
	upToDate := func(spec, runs string, n int64) (int64, []any) {
		if spec == runs {
			return n, []any{cond("UpToDate", "True")}
		}
		return 0, []any{cond("UpToDate", "False")}
	}
	n, c := upToDate(cpSpec, cpRuns, 1)
	_ = unstructured.SetNestedField(s.ControlPlane.Object, cpSpec, "spec", "version")
	_ = unstructured.SetNestedField(s.ControlPlane.Object, cpRuns, "status", "version")
	_ = unstructured.SetNestedField(s.ControlPlane.Object, n, "status", "upToDateReplicas")
	_ = unstructured.SetNestedField(s.Machines[0].Object, cpRuns, "spec", "version")
	_ = unstructured.SetNestedSlice(s.Machines[0].Object, c, "status", "conditions")
	n, c = upToDate(wSpec, wRuns, 2)
	_ = unstructured.SetNestedField(s.Workers[0].Object, wSpec, "spec", "template", "spec", "version")
	_ = unstructured.SetNestedField(s.Workers[0].Object, n, "status", "upToDateReplicas")
	for _, m := range s.Machines[1:] {
		_ = unstructured.SetNestedField(m.Object, wRuns, "spec", "version")
		_ = unstructured.SetNestedSlice(m.Object, c, "status", "conditions")
	}
	return s
}

func stepList(steps []FleetStepReport) string {
	var out []string
	for _, s := range steps {
		line := stepName(s.Component, s.Version)
		if s.Done {
			line += fmt.Sprintf(" done %.0fs", s.Seconds)
		}
		out = append(out, line)
	}
	return strings.Join(out, "; ")
}

// TestChainTracker replays the Cluster states of a v1.34.2 → v1.36.0 chained upgrade as the
// topology controller walks it (control plane v1.35.0, control plane v1.36.0, then the workers
// straight to v1.36.0, which the skew policy allows), one read every 20s from the patch, and
// checks the steps seen, when each is done and its seconds (since the previous step's end), and
// that only the final state is done at the target.
func TestChainTracker(t *testing.T) {
	type obs struct {
		state    ClusterState
		done     string // steps finished at this observation
		plan     bool   // the plan changed
		finished bool   // StepDone at the target
	}
	const a, b, c = "v1.34.2", "v1.35.0", "v1.36.0"
	v := []string{}
	cases := []struct {
		name  string
		seq   []obs
		steps string
	}{
		{"every state seen", []obs{
			{state: chainState(c, a, a, a, a, nil, nil)}, // patched, not planned yet
			{state: chainState(c, b, a, a, a, []string{c}, []string{c}), plan: true},
			{state: chainState(c, b, b, a, a, []string{c}, []string{c}), done: "control plane v1.35.0 done 60s"},
			{state: chainState(c, c, b, a, a, v, []string{c}), plan: true},
			{state: chainState(c, c, c, a, a, v, []string{c}), done: "control plane v1.36.0 done 40s"},
			{state: chainState(c, c, c, c, a, v, v), plan: true},
			{state: chainState(c, c, c, c, c, v, v), done: "workers v1.36.0 done 40s", finished: true},
		}, "control plane v1.35.0 done 60s; control plane v1.36.0 done 40s; workers v1.36.0 done 40s"},
		{"a rolled-out state between two polls is not seen", []obs{
			{state: chainState(c, b, a, a, a, []string{c}, []string{c}), plan: true},
			// v1.35.0 finished and the controller applied v1.36.0 between two reads.
			{state: chainState(c, c, b, a, a, v, []string{c}), done: "control plane v1.35.0 done 40s", plan: true},
			{state: chainState(c, c, c, c, c, v, v), done: "control plane v1.36.0 done 20s; workers v1.36.0 done 0s", plan: true, finished: true},
		}, "control plane v1.35.0 done 40s; control plane v1.36.0 done 20s; workers v1.36.0 done 0s"},
		{"the plan is recomputed under the upgrade", []obs{
			{state: chainState(c, a, a, a, a, []string{b, c}, []string{c}), plan: true},
			// The ClusterClass now lists v1.35.1 instead of v1.35.0: the controller plans it.
			{state: chainState(c, a, a, a, a, []string{"v1.35.1", c}, []string{c}), plan: true},
			{state: chainState(c, "v1.35.1", "v1.35.1", a, a, []string{c}, []string{c}), done: "control plane v1.35.1 done 60s", plan: true},
		}, "control plane v1.35.1 done 60s; control plane v1.36.0; workers v1.36.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			tr := NewChainTracker(chainState(a, a, a, a, a, nil, nil), now)
			for i, o := range tc.seq {
				now = now.Add(20 * time.Second)
				u := tr.Observe(o.state, now)
				if got := stepList(u.Done); got != o.done {
					t.Errorf("observation %d: done %q, want %q", i, got, o.done)
				}
				if u.PlanChanged != o.plan {
					t.Errorf("observation %d: plan changed %v, want %v", i, u.PlanChanged, o.plan)
				}
				if done, why := StepDone(o.state, ControlPlane, c); done != o.finished {
					t.Errorf("observation %d: done at %s %v, want %v (%q)", i, c, done, o.finished, why)
				}
			}
			if got := stepList(tr.Steps()); got != tc.steps {
				t.Errorf("steps %q\nwant  %q", got, tc.steps)
			}
		})
	}
}

// TestChainTrackerResumes: tracking that starts while the control plane still rolls out
// v1.35.0 (a re-run after Ctrl-C) counts that rollout as its first step.
func TestChainTrackerResumes(t *testing.T) {
	const a, b, c = "v1.34.2", "v1.35.0", "v1.36.0"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tr := NewChainTracker(chainState(c, b, a, a, a, []string{c}, []string{c}), now)
	u := tr.Observe(chainState(c, b, b, a, a, []string{c}, []string{c}), now.Add(10*time.Second))
	if got := stepList(u.Done); got != "control plane v1.35.0 done 10s" {
		t.Errorf("done %q", got)
	}
	if got := stepList(tr.Steps()); got != "control plane v1.35.0 done 10s; control plane v1.36.0; workers v1.36.0" {
		t.Errorf("steps %q", got)
	}
	// Settled already at the target: nothing to track.
	tr = NewChainTracker(chainState(c, c, c, c, c, nil, nil), now)
	if u := tr.Observe(chainState(c, c, c, c, c, nil, nil), now); len(u.Done) != 0 || len(tr.Steps()) != 0 {
		t.Errorf("at the target: %+v, steps %q", u, stepList(tr.Steps()))
	}
}
