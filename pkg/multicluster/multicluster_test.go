package multicluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/capctl/capctl/pkg/cluster"
)

func kubeconfig(names ...string) *cluster.Kubeconfig {
	cfg := clientcmdapi.NewConfig()
	for _, n := range names {
		cfg.Contexts[n] = &clientcmdapi.Context{Cluster: n}
	}
	return &cluster.Kubeconfig{Config: cfg, Files: "a:b"}
}

func TestResolve(t *testing.T) {
	kc := kubeconfig("us-1", "eu-1", "eu-2")
	if got, err := Resolve(kc, Selection{All: true}); err != nil || strings.Join(got, ",") != "eu-1,eu-2,us-1" {
		t.Errorf("all: %v %v", got, err)
	}
	if got, err := Resolve(kc, Selection{Contexts: []string{"us-1", "eu-2"}}); err != nil || strings.Join(got, ",") != "us-1,eu-2" {
		t.Errorf("named: %v %v", got, err)
	}
	for _, c := range []struct {
		sel  Selection
		want string
	}{
		{Selection{Contexts: []string{"eu-1", "eu-1"}}, `names context "eu-1" twice`},
		{Selection{Contexts: []string{"eu-9"}}, `context "eu-9" not found in kubeconfig a:b (contexts: eu-1, eu-2, us-1)`},
		{Selection{Contexts: []string{"eu-1"}, All: true}, "cannot be used together"},
	} {
		if _, err := Resolve(kc, c.sel); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.sel, err, c.want)
		}
	}
}

func TestSameCluster(t *testing.T) {
	err := sameCluster([]Member{{Context: "a", UID: "1"}, {Context: "b", UID: "2"}, {Context: "c", UID: "1"}})
	if err == nil || !strings.Contains(err.Error(), `"a" and "c" (kube-system UID 1)`) {
		t.Errorf("%v", err)
	}
	if err := sameCluster([]Member{{Context: "a", UID: "1"}, {Context: "b"}}); err != nil {
		t.Error(err)
	}
}

func TestDriftAndExitCode(t *testing.T) {
	ms := []ManagementCluster{
		{Name: "eu-1", Reachable: true, Providers: []Provider{{Name: "cluster-api", Version: "v1.14.2"}}},
		{Name: "eu-2", Reachable: true, Providers: []Provider{{Name: "cluster-api", Version: "v1.13.5"}}},
		{Name: "us-1", Reachable: true, Providers: []Provider{{Name: "cluster-api", Version: "v1.14.2"}}, Problems: 1},
	}
	d := FindDrift(ms)
	if len(d) != 1 || d[0].Summary != "cluster-api v1.13.5 on eu-2, v1.14.2 elsewhere" {
		t.Errorf("drift %+v", d)
	}
	if ExitCode(ms, true) != ExitProblems || ExitCode(ms, false) != ExitOK {
		t.Error("problems exit code")
	}
	ms = append(ms, ManagementCluster{Name: "ap-1", Error: "unreachable"})
	if ExitCode(ms, true) != ExitUnreadable {
		t.Error("unreadable exit code")
	}
	if len(FindDrift(ms[:1])) != 0 {
		t.Error("one management cluster cannot drift")
	}
}

// TestViewExit: a partial view outranks what it shows, and the permissions guide says its code.
func TestViewExit(t *testing.T) {
	for _, tc := range []struct {
		complete, problems, judge bool
		want                      int
	}{
		{true, false, true, ExitOK}, {true, true, true, ExitProblems}, {true, true, false, ExitOK},
		{false, false, false, ExitIncomplete}, {false, true, true, ExitIncomplete},
	} {
		if got := ViewExit(tc.complete, tc.problems, tc.judge); got != tc.want {
			t.Errorf("ViewExit(%v, %v, %v) = %d, want %d", tc.complete, tc.problems, tc.judge, got, tc.want)
		}
	}
	if got := ExitCodeOf([]ManagementCluster{{Name: "a", Reachable: true}}, false, false); got != ExitIncomplete {
		t.Errorf("a partial view over a reachable management cluster: exit %d", got)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "guides", "permissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), fmt.Sprintf("exit code %d", ExitIncomplete)) {
		t.Errorf("docs/guides/permissions.md does not give the partial view's exit code %d", ExitIncomplete)
	}
}
