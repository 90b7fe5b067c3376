package rollout

import (
	"bytes"
	"testing"
)

func TestRolloutText(t *testing.T) {
	res := &Result{Action: Restart, DryRun: true, Time: "2026-12-01T09:30:00Z", Items: []Target{
		{Ref: "machinedeployment/md-0", Kind: "MachineDeployment", Namespace: "team-a", Name: "md-0", Cluster: "prod-1", Machines: []Machine{
			{Name: "md-0-aaaaa", Phase: "Running", Version: "v1.33.1", Node: "md-0-aaaaa"},
			{Name: "md-0-bb", Phase: "Provisioning", Version: "v1.33.1"},
		}},
		{Ref: "kubeadmcontrolplane/cp", Kind: "KubeadmControlPlane", Namespace: "team-a", Name: "cp"},
	}}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `machinedeployment/md-0 would be restarted (dry run), rollout after 2026-12-01T09:30:00Z
└─MachineDeployment team-a/md-0 (cluster prod-1): 2 Machines will be replaced
  MACHINE        PHASE          VERSION   NODE
  ├─md-0-aaaaa   Running        v1.33.1   md-0-aaaaa
  └─md-0-bb      Provisioning   v1.33.1
kubeadmcontrolplane/cp would be restarted (dry run), rollout after 2026-12-01T09:30:00Z
└─KubeadmControlPlane team-a/cp: no Machines yet, nothing to replace
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
