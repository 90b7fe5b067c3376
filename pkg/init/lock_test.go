package clusterinit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
// of two inits started at once, the second meets the first's lock, ten times.
func TestInitRefusedWhileAnotherInitRuns(t *testing.T) {
	needShared(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	ctx := testenv.Context(t)
	// The test needs a server without Cluster API: the shared one unless an earlier test of the
	// package installed it there (as in a full run), else one of its own.
	env := shared
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Logf("the shared server already has Cluster API (%v): starting an empty one", err)
		env = testenv.Start(t, testenv.Options{})
	}
	c := env.Client
	info := lease.Info{Name: clusterinit.LockName, Operation: "init", Target: c.Config.Host, Scope: "the management cluster"}

	// Two real inits started together, 10 times: the one that takes the lock is held inside it
	// (OnLocked, before its first write) until the other has returned, so the other meets the
	// lock every time; then the winner is cancelled, so nothing is installed.
	o := clusterinit.InitRequest{StrictChecks: true, Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Infrastructure: []string{"docker:v1.14.0"}}}
	for i := range 10 {
		inside, done := make(chan int, 2), make(chan int, 2)
		release := make(chan struct{})
		ctxs, cancels := make([]context.Context, 2), make([]context.CancelFunc, 2)
		errs := make([]error, 2)
		for k := range 2 {
			ctxs[k], cancels[k] = context.WithCancel(ctx)
			defer cancels[k]()
			ok := o
			ok.OnLocked = func() { inside <- k; <-release }
			go func() {
				_, errs[k] = clusterinit.InitWith(ctxs[k], clients(t, cfgPath, env.Config), ok)
				done <- k
			}()
		}
		// Both events, in either order: one init inside the lock, the other returned.
		winner, loser := -1, -1
		timeout := time.After(2 * time.Minute)
		for winner < 0 || loser < 0 {
			select {
			case winner = <-inside:
			case loser = <-done:
				if winner < 0 && !errors.Is(errs[loser], clusterinit.ErrInitRunning) {
					t.Fatalf("round %d: init %d ended before either held the lock: %v", i, loser, errs[loser])
				}
			case <-timeout:
				t.Fatalf("round %d: no init took the lock, or the other did not return (winner %d, loser %d)", i, winner, loser)
			}
		}
		if loser == winner {
			t.Fatalf("round %d: the init holding the lock returned while held", i)
		}
		err := errs[loser]
		if !errors.Is(err, clusterinit.ErrInitRunning) || strings.Contains(err.Error(), "cert-manager") || !strings.Contains(err.Error(), "pid") {
			t.Fatalf("round %d: the second init should say another init is running (naming it, not cert-manager): %v", i, err)
		}
		cancels[winner]()
		close(release)
		<-done
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Fatalf("round %d: an init installed something: %v", i, err)
		}
	}

	held, _, err := lease.Acquire(ctx, c, []string{metav1.NamespaceSystem}, info)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	_, err = clusterinit.InitWith(ctx, clients(t, cfgPath, env.Config), o)
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
