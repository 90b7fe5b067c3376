package convert

import (
	"strings"
	"testing"
)

// TestKeepsUserSelector: a selector the user wrote is a field the API server requires when no
// defaulting webhook fills it (a MachineDeployment's spec.selector); convert keeps it even though
// it is empty (`selector: {}`, which the typed v1beta2 object omits when encoded).
func TestKeepsUserSelector(t *testing.T) {
	in := `apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: md-0
  namespace: default
spec:
  clusterName: c1
  replicas: 1
  selector: {}
  template:
    spec:
      clusterName: c1
      version: v1.34.1
      bootstrap:
        configRef:
          apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
          kind: KubeadmConfigTemplate
          name: md-0
      infrastructureRef:
        apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
        kind: DockerMachineTemplate
        name: md-0
`
	fr := ConvertText("md.yaml", []byte(in))
	for _, o := range fr.Objects {
		if o.Error != "" {
			t.Fatalf("%s: %s", o.Object(), o.Error)
		}
	}
	if !strings.Contains(string(fr.Output), "selector:") {
		t.Fatalf("the user's selector was dropped:\n%s", fr.Output)
	}
}
