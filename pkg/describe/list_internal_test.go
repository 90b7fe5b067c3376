package describe

import (
	"strings"
	"testing"
)

// TestDecodeList: a page is read item by item whatever the order of its fields, and its continue
// token is kept; null items and malformed pages are handled.
func TestDecodeList(t *testing.T) {
	page := `{"apiVersion":"cluster.x-k8s.io/v1beta2","items":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"a","managedFields":[{"manager":"x"}]},"spec":{"version":"v1.34.1"}},{"metadata":{"name":"b"},"status":{"conditions":[]}}],"kind":"MachineList","metadata":{"continue":"tok","resourceVersion":"7"}}`
	var names []string
	cont, err := decodeList(strings.NewReader(page), func(it *leanItem) { names = append(names, it.Metadata.Name) })
	if err != nil || cont != "tok" || strings.Join(names, ",") != "a,b" {
		t.Fatalf("decodeList = %q, %v; items %v", cont, err, names)
	}
	cont, err = decodeList(strings.NewReader(`{"metadata":{},"items":null,"kind":"MachineList"}`), func(*leanItem) { t.Error("an item from null") })
	if err != nil || cont != "" {
		t.Fatalf("null items: %q, %v", cont, err)
	}
	for _, bad := range []string{`[]`, `{"items":{}}`, `{"items":[{]}`, `{"items":[]`} {
		if _, err := decodeList(strings.NewReader(bad), func(*leanItem) {}); err == nil {
			t.Errorf("%s decodes", bad)
		}
	}
}

// TestOptionsValidate: the request of `describe cluster` refuses a name or namespace that cannot
// name an object, and a bad --show-conditions, as the command does.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    ClusterRequest
		want string
	}{
		{ClusterRequest{Name: "c1", Namespace: "team-a", ShowConditions: "all"}, ""},
		{ClusterRequest{Name: "C1"}, `invalid cluster name "C1"`},
		{ClusterRequest{Name: "c1", Namespace: "../x"}, `invalid namespace "../x"`},
	} {
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
