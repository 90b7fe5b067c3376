package clusterinit_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/lease"
)

// TestInitRefusedWhileAnotherInitRuns: while another init holds the management cluster's init
// lock, init says so (naming the holder), not a cert-manager failure, and installs nothing; and
// of two runs taking the init lock at once exactly one wins, ten times.
func TestInitRefusedWhileAnotherInitRuns(t *testing.T) {
	needShared(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	ctx := testenv.Context(t)
	c := shared.Client
	if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Skipf("the shared server already has Cluster API (%v): this test needs it empty", err)
	}
	info := lease.Info{Name: clusterinit.LockName, Operation: "init", Target: c.Config.Host, Scope: "the management cluster"}

	for i := range 10 {
		var wg sync.WaitGroup
		sets := make([]*lease.Set, 2)
		errs := make([]error, 2)
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sets[k], _, errs[k] = lease.Acquire(ctx, c, []string{metav1.NamespaceSystem}, info)
			}()
		}
		wg.Wait()
		won := 0
		for k := range 2 {
			if errs[k] == nil {
				won++
				sets[k].Release(ctx)
			} else if !errors.Is(errs[k], lease.ErrLocked) {
				t.Fatalf("round %d: %v", i, errs[k])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of two concurrent init locks won", i, won)
		}
	}

	held, _, err := lease.Acquire(ctx, c, []string{metav1.NamespaceSystem}, info)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	o := clusterinit.Options{Validate: true, Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Infrastructure: []string{"docker:v1.14.0"}}}
	_, err = clusterinit.Init(ctx, clients(t, cfgPath, shared.Config), o)
	if !errors.Is(err, clusterinit.ErrInitRunning) {
		t.Fatalf("init while another holds the lock: want ErrInitRunning, got %v", err)
	}
	if strings.Contains(err.Error(), "cert-manager") || !strings.Contains(err.Error(), "pid") {
		t.Errorf("the refusal should name the other init, not cert-manager: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused init installed something: %v", err)
	}
}
