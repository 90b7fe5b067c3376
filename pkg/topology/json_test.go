package topology

import (
	"encoding/json"
	"testing"
)

// TestJSONFieldsAlwaysThere: the fields scripts read are in every cluster's JSON, empty or not
// (a script testing `.refused == ""` must not meet a missing key).
func TestJSONFieldsAlwaysThere(t *testing.T) {
	c := ClusterPlan{Namespace: "ns", Name: "c1", Class: "cc"}
	c.Normalize()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"managementCluster", "namespace", "name", "class", "controlPlane", "machineDeployments", "machinePools", "changes", "refused", "partial"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%q missing from %s", k, b)
		}
	}
	if cp, _ := m["controlPlane"].(map[string]any); cp == nil || cp["rollsOut"] != false {
		t.Errorf("controlPlane.rollsOut missing from %s", b)
	}
}
