package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestFleetAuditRecordOnAPIServer: the fleet apply records each rollout in a ConfigMap of
// capctl-system. The record exists before the first patch and follows every step (read while
// the run is in the middle of a wave, it says which cluster is being upgraded: what a killed
// run leaves), names the user the API server authenticated, and after Ctrl-C in the middle of
// the second wave it is still true: the first wave done, the cluster patched interrupted, the
// one after it not started. The re-run is recorded as a second rollout, and `upgrade history`
// lists both, newest first. A user who cannot write the record cannot start a rollout: nothing
// is changed.
func TestFleetAuditRecordOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "au")
	createFleetCluster(t, c, "au", "a", "v1.34.2", "1")
	createFleetCluster(t, c, "au", "b", "v1.34.2", "2")
	createFleetCluster(t, c, "au", "c", "v1.34.2", "2")
	startStandIn(t, c, 6)

	t.Run("a user who cannot write the record changes nothing", func(t *testing.T) {
		env.GrantAllBut(t, "bob", map[string][]string{"configmaps": {"create"}})
		bob := env.User(t, "bob")
		before := resourceVersions(t, c)
		_, err := ApplyFleet(ctx, bob, FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "au"}, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "the rollout's audit record could not be written, so nothing was changed") || !strings.Contains(err.Error(), "ConfigMaps in namespace capctl-system") {
			t.Fatalf("err = %v", err)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects")
		}
		if recs, err := History(ctx, c, HistoryRequest{}); err != nil || len(recs) != 0 {
			t.Errorf("history after a refused run: %+v %v", recs, err)
		}
	})

	env.Bind(t, "alice", "cluster-admin")
	alice := env.User(t, "alice", "platform-team")
	var midWave []RolloutRecord
	var midErr error
	runCtx, interrupt := context.WithCancel(ctx)
	var once sync.Once
	req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "au"}, Timeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}
	req.Progress = func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if strings.Contains(line, "set KubeadmControlPlane a-cp") {
			midWave, midErr = History(ctx, c, HistoryRequest{})
		}
		if strings.Contains(line, "set KubeadmControlPlane b-cp") {
			once.Do(interrupt) // Ctrl-C in the middle of the second wave
		}
	}
	rep, err := ApplyFleet(runCtx, alice, req)
	if !errors.Is(err, ErrFleetInterrupted) || rep.Record == "" {
		t.Fatalf("err = %v, report %+v", err, rep)
	}

	// What a run killed right after its first patch leaves.
	if midErr != nil || len(midWave) != 1 {
		t.Fatalf("record during the first wave: %+v %v", midWave, midErr)
	}
	m := midWave[0]
	if m.State != RolloutRunning || m.Finished != nil || m.Waves[0].Started == nil || m.Waves[0].Clusters[0].Result != ResultUpgrading || m.Waves[1].Clusters[0].Result != ResultNotStarted {
		t.Errorf("record during the first wave: %+v", m)
	}

	recs, err := History(ctx, c, HistoryRequest{Name: rep.Record})
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if r.User != "alice" || !strings.Contains(strings.Join(r.Groups, ","), "platform-team") || r.State != RolloutInterrupted || r.Finished == nil || r.KubernetesVersion != "v1.35.0" {
		t.Errorf("record %+v", r)
	}
	w1, w2 := r.Waves[0], r.Waves[1]
	if w1.Wave != "1" || w1.Started == nil || w1.Finished == nil || w1.Clusters[0].Result != ResultUpgraded {
		t.Errorf("wave 1 %+v", w1)
	}
	if w2.Started == nil || w2.Clusters[0].Name != "b" || w2.Clusters[0].Result != ResultInterrupted || w2.Clusters[0].Step == "" || w2.Clusters[1].Result != ResultNotStarted {
		t.Errorf("wave 2 %+v", w2)
	}
	if v := specVersion(t, c, kcpGVK, "au", "c-cp"); v != "v1.34.2" {
		t.Errorf("c was patched (%s), yet its record says %s", v, w2.Clusters[1].Result)
	}

	// The same command again finishes, recorded as a second rollout. Another writer annotates
	// the record's ConfigMap in the middle of it: the record re-reads and keeps following the run.
	time.Sleep(1100 * time.Millisecond) // the records' times are in seconds: keep them apart
	var record string
	req.Progress = func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if strings.HasPrefix(line, "Recording the rollout in ConfigMap ") {
			record = args[1].(string)
		}
		if strings.Contains(line, "set KubeadmControlPlane c-cp") {
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: AuditNamespace, Name: record}, cm); err != nil {
				t.Error(err)
				return
			}
			patch := client.MergeFrom(cm.DeepCopy())
			cm.SetAnnotations(map[string]string{"example.com/reviewed-by": "someone"})
			if err := c.Patch(ctx, cm, patch); err != nil {
				t.Error(err)
			}
		}
	}
	rep2, err := ApplyFleet(ctx, c, req)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	recs, err = History(ctx, c, HistoryRequest{})
	if err != nil || len(recs) != 2 || recs[0].Name != rep2.Record || recs[1].Name != rep.Record {
		t.Fatalf("history %+v %v", recs, err)
	}
	r2 := recs[0]
	if cm := (&corev1.ConfigMap{}); c.Get(ctx, client.ObjectKey{Namespace: AuditNamespace, Name: rep2.Record}, cm) != nil || cm.Annotations["example.com/reviewed-by"] != "someone" {
		t.Errorf("the other writer's annotation was lost: %v", cm.Annotations)
	}
	if r2.State != RolloutSucceeded || r2.User == "" || r2.User == "alice" {
		t.Errorf("second record %+v", r2)
	}
	if got := fmt.Sprint(r2.Waves[0].Clusters[0].Result, " ", r2.Waves[1].Clusters[0].Result, " ", r2.Waves[1].Clusters[1].Result); got != "UpToDate Upgraded Upgraded" {
		t.Errorf("second record's results %s", got)
	}
	if _, err := History(ctx, c, HistoryRequest{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "no rollout nope is recorded in namespace capctl-system") {
		t.Errorf("unknown record: %v", err)
	}
	var b strings.Builder
	if err := RenderHistory(&b, recs); err != nil || !strings.Contains(b.String(), rep.Record) || !strings.Contains(b.String(), "alice") || !strings.Contains(b.String(), RolloutInterrupted) {
		t.Errorf("history table:\n%s %v", b.String(), err)
	}
	b.Reset()
	if err := RenderRecord(&b, recs[1]); err != nil || !strings.Contains(b.String(), "Interrupted   control plane v1.35.0   interrupted") {
		t.Errorf("record:\n%s %v", b.String(), err)
	}
}
