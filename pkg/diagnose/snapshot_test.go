package diagnose_test

import (
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/diagnose"
)

// snapshotOf turns a diagnosetest cluster into the snapshot describe.Fetch would read of it.
func snapshotOf(cl *diagnosetest.Cluster) *describe.Snapshot {
	s := &describe.Snapshot{ServedVersion: "v1beta2"}
	for _, o := range cl.Objects {
		switch o.GetKind() {
		case "Cluster":
			s.Cluster = o
		case "Machine":
			s.Machines = append(s.Machines, *o)
		case "MachineHealthCheck":
			s.MachineHealthChecks = append(s.MachineHealthChecks, *o)
		default:
			gk := o.GroupVersionKind().GroupKind()
			s.Referenced = append(s.Referenced, describe.Referenced{Group: gk.Group, Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), Object: o})
		}
	}
	return s
}

// The pure path from raw objects: a snapshot with a Machine Provisioning for 30 minutes becomes
// the provisioning finding, with the machine's phase and bootstrap data read from the Machine.
func TestNewInputFromSnapshot(t *testing.T) {
	cl := diagnosetest.NewCluster("ns", "c").AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Provisioning", DataSecret: true,
		Conditions: []diagnosetest.C{{Type: "InfrastructureReady", Status: "False", Reason: "NotReady", Message: "DockerMachine is not ready", Ago: 30 * time.Minute}}})
	in, err := diagnose.NewInput(snapshotOf(cl), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := in.Machines["c-md-a"]; f.Phase != "Provisioning" || !f.BootstrapOK || f.InfraOK || in.Cluster.ControlPlaneEndpoint != "10.0.0.1:6443" {
		t.Fatalf("facts: %+v, cluster %+v", f, in.Cluster)
	}
	in.Now = diagnosetest.Now
	rep := diagnose.Run(in)
	if r := rep.Root(); r == nil || r.Rule != diagnose.RuleMachineProvisioning || r.Object != "Machine ns/c-md-a" {
		t.Fatalf("root: %+v", rep.Findings)
	}
	// Two minutes in, it is not stuck yet.
	in.Now = diagnosetest.Now.Add(-28 * time.Minute)
	if rep := diagnose.Run(in); !rep.Healthy {
		t.Fatalf("not stuck yet: %+v", rep.Findings)
	}
}

// NeedsWorkload picks the clusters whose workload cluster `diagnose clusters` reads: those whose
// Machines leave the Node's state open, never one the core already failed to reach.
func TestNeedsWorkload(t *testing.T) {
	m30 := 30 * time.Minute
	notReady := diagnosetest.Machine{Name: "c-cp-a", ControlPlane: true, Phase: "Running", DataSecret: true, ProviderID: "docker:////c-cp-a", NodeName: "c-cp-a",
		Conditions: []diagnosetest.C{{Type: "NodeReady", Status: "Unknown", Reason: "NodeStatusUnknown", Ago: m30}}}
	ready := notReady
	ready.Conditions = []diagnosetest.C{{Type: "NodeReady", Status: "True", Reason: "NodeReady", Ago: m30}}
	noCondition := notReady
	noCondition.Conditions = nil
	notJoined := diagnosetest.Machine{Name: "c-md-a", Phase: "Provisioned", DataSecret: true, ProviderID: "docker:////c-md-a",
		Conditions: []diagnosetest.C{{Type: "InfrastructureReady", Status: "True", Reason: "Ready", Ago: m30}}}
	pending := diagnosetest.Machine{Name: "c-md-a", Phase: "Pending", Conditions: []diagnosetest.C{{Type: "BootstrapConfigReady", Status: "False", Reason: "NotReady", Ago: m30}}}
	probeFailed := diagnosetest.C{Type: "RemoteConnectionProbe", Status: "False", Reason: "ProbeFailed", Ago: m30}
	for _, tc := range []struct {
		name  string
		build func(*diagnosetest.Cluster)
		want  bool
	}{
		{"no machines", func(*diagnosetest.Cluster) {}, false},
		{"Node Ready", func(cl *diagnosetest.Cluster) { cl.AddMachine(ready) }, false},
		{"pending machine", func(cl *diagnosetest.Cluster) { cl.AddMachine(pending) }, false},
		{"Node not Ready", func(cl *diagnosetest.Cluster) { cl.AddMachine(notReady) }, true},
		{"Node state not reported", func(cl *diagnosetest.Cluster) { cl.AddMachine(noCondition) }, true},
		{"Node not joined", func(cl *diagnosetest.Cluster) { cl.AddMachine(notJoined) }, true},
		{"Node not Ready, probe failed", func(cl *diagnosetest.Cluster) { cl.AddMachine(notReady).SetCondition(probeFailed) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := diagnosetest.NewCluster("ns", "c")
			tc.build(cl)
			in, err := diagnose.NewInput(snapshotOf(cl), nil)
			if err != nil {
				t.Fatal(err)
			}
			in.Now, in.StuckAfter = diagnosetest.Now, diagnose.DefaultStuckAfter
			if got := in.NeedsWorkload(); got != tc.want {
				t.Errorf("NeedsWorkload = %v, want %v", got, tc.want)
			}
		})
	}
}
