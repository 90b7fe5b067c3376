package convert

import (
	"strings"
	"testing"
)

// selectorsWritten are the ways a hand-made v1beta1 MachineDeployment writes an empty selector;
// each is a field the API server requires when no defaulting webhook fills it.
var selectorsWritten = map[string]string{
	"empty":             "selector: {}",
	"null matchLabels":  "selector:\n    matchLabels: null",
	"empty matchLabels": "selector:\n    matchLabels: {}",
	"both null":         "selector:\n    matchLabels: null\n    matchExpressions: null",
}

// machineDeploymentWith is a v1beta1 MachineDeployment whose spec.selector is written as sel.
func machineDeploymentWith(sel string) string {
	return `apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: md-0
  namespace: default
spec:
  clusterName: c1
  replicas: 1
  ` + sel + `
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
}

// TestKeepsUserSelector: a selector the user wrote is a field the API server requires when no
// defaulting webhook fills it (a MachineDeployment's spec.selector); convert keeps it even though
// it selects nothing (`selector: {}`, or fields written null or empty, which the typed v1beta2
// object omits when encoded): it becomes `selector: {}`.
func TestKeepsUserSelector(t *testing.T) {
	for name, sel := range selectorsWritten {
		t.Run(name, func(t *testing.T) {
			fr := ConvertText("md.yaml", []byte(machineDeploymentWith(sel)))
			for _, o := range fr.Objects {
				if o.Error != "" {
					t.Fatalf("%s: %s", o.Object(), o.Error)
				}
			}
			if !strings.Contains(string(fr.Output), "  selector: {}\n") {
				t.Fatalf("the user's selector was dropped:\n%s", fr.Output)
			}
		})
	}
}
