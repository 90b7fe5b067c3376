// Package lease holds capctl's locks: coordination.k8s.io Leases with an owner, renewal in the
// background and a takeover rule for a dead holder. Moves, backups and restores lock the
// namespaces they work on; init locks the management cluster.
package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	utilptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultDuration is how long a lock lasts without renewal; its holder renews it every third
// of that while it runs.
const DefaultDuration = 60 * time.Second

// Lock annotations: who holds the Lease and for what (the Lease's holderIdentity is one opaque
// string; these say it in words for the refusal).
const (
	lockOperationAnnotation = "capctl.cluster.x-k8s.io/lock-operation"
	lockTargetAnnotation    = "capctl.cluster.x-k8s.io/lock-target"
	lockScopeAnnotation     = "capctl.cluster.x-k8s.io/lock-scope"
	lockHostAnnotation      = "capctl.cluster.x-k8s.io/lock-host"
	lockPIDAnnotation       = "capctl.cluster.x-k8s.io/lock-pid"
)

// ErrLocked is returned when another operation holds a namespace's lock.
var ErrLocked = errors.New("another capctl operation holds the namespace")

// ErrLost ends an operation whose lock another process took over (it was not renewed in
// time, so it counted as dead).
var ErrLost = errors.New("the lock was taken over by another capctl operation")

// LockedError says who holds a namespace.
type LockedError struct {
	Namespace, Name, Holder, Operation, Target, Scope string
	Since, Renewed                                    time.Time
	Duration                                          time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%v: namespace %s is locked (Lease %s/%s) by %s, a %s of %s to %s running since %s (last renewed %s); wait for it to finish. "+
		"If that process is gone, the lock counts as dead once it has not been renewed for %s (after %s), or at once from the machine it ran on",
		ErrLocked, e.Namespace, e.Namespace, e.Name, e.Holder, e.Operation, e.Scope, e.Target, e.Since.UTC().Format(time.RFC3339),
		e.Renewed.UTC().Format(time.RFC3339), e.Duration, e.Renewed.Add(e.Duration).UTC().Format(time.RFC3339))
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Info describes the operation taking a lock.
type Info struct {
	// Name is the Lease's name (one per kind of operation that excludes the others).
	Name string
	// Labels are set on the Lease.
	Labels    map[string]string
	Operation string // move, backup, restore, init
	Target    string // the target cluster or directory
	Scope     string
	// Duration is how long the lock lasts unrenewed (default DefaultDuration); Now is the clock.
	Duration time.Duration
	Now      func() time.Time
}

// Set is a set of held namespace Leases, renewed in the background until Release.
type Set struct {
	c        client.Client
	info     Info
	identity string
	duration time.Duration
	now      func() time.Time

	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease // namespace → the Lease as last written
	lost   error
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
}

// lockIdentity names this process: user@host, pid and a random token, so two runs of one user on
// one machine are still two holders.
func lockIdentity() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s pid %d (%s)", name, host, os.Getpid(), rand.String(6))
}

// Acquire takes every namespace's Lease (all or none) and returns a context that is
// cancelled, with cause ErrLost, should another process take one over.
func Acquire(ctx context.Context, c client.Client, namespaces []string, info Info) (*Set, context.Context, error) {
	l := &Set{c: c, info: info, identity: lockIdentity(), duration: info.Duration, now: info.Now, leases: map[string]*coordinationv1.Lease{}}
	setLive(l.identity, true)
	if l.duration <= 0 {
		l.duration = DefaultDuration
	}
	if l.now == nil {
		l.now = time.Now
	}
	if err := l.Add(ctx, namespaces); err != nil {
		setLive(l.identity, false)
		return nil, ctx, err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	l.cancel, l.stop, l.done = cancel, make(chan struct{}), make(chan struct{})
	go l.renewLoop(lctx)
	return l, lctx, nil
}

// Add takes the Leases of more namespaces (-A finds namespaces as it discovers); on a refusal it
// releases the ones this call took.
func (l *Set) Add(ctx context.Context, namespaces []string) error {
	nss := append([]string(nil), namespaces...)
	sort.Strings(nss)
	var taken []string
	for _, ns := range nss {
		l.mu.Lock()
		_, have := l.leases[ns]
		l.mu.Unlock()
		if have || ns == "" {
			continue
		}
		lease, err := l.take(ctx, ns)
		if err != nil {
			for _, t := range taken {
				l.releaseOne(context.WithoutCancel(ctx), t)
			}
			return err
		}
		l.mu.Lock()
		l.leases[ns] = lease
		l.mu.Unlock()
		taken = append(taken, ns)
	}
	return nil
}

// take creates the namespace's Lease, or takes over a dead holder's; a live holder's is refused.
func (l *Set) take(ctx context.Context, ns string) (*coordinationv1.Lease, error) {
	for attempt := 0; attempt < 3; attempt++ {
		now := metav1.NewMicroTime(l.now())
		existing := &coordinationv1.Lease{}
		err := l.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.info.Name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: l.info.Name, Labels: l.info.Labels}}
			l.fill(lease, now, true)
			if err := l.c.Create(ctx, lease); err != nil {
				if apierrors.IsAlreadyExists(err) {
					continue // someone else was faster: look at their lease
				}
				return nil, fmt.Errorf("taking the lock of namespace %s (Lease %s): %w", ns, l.info.Name, err)
			}
			return lease, nil
		case err != nil:
			return nil, fmt.Errorf("reading the lock of namespace %s (Lease %s): %w", ns, l.info.Name, err)
		}
		if alive, held := l.holderAlive(existing); alive {
			return nil, held
		}
		// A dead holder: take over, guarded by the resourceVersion just read.
		l.fill(existing, now, true)
		existing.Spec.LeaseTransitions = utilptr.To(utilptr.Deref(existing.Spec.LeaseTransitions, 0) + 1)
		if err := l.c.Update(ctx, existing); err != nil {
			if apierrors.IsConflict(err) {
				continue
			}
			return nil, fmt.Errorf("taking over the expired lock of namespace %s (Lease %s): %w", ns, l.info.Name, err)
		}
		return existing, nil
	}
	return nil, fmt.Errorf("taking the lock of namespace %s (Lease %s): it kept changing under concurrent capctl runs; try again", ns, l.info.Name)
}

// holderAlive applies the takeover rule: a holder is dead when its Lease was not renewed for
// its duration, or when it ran on this machine and its process no longer exists (a killed
// run's re-run need not wait).
func (l *Set) holderAlive(lease *coordinationv1.Lease) (bool, *LockedError) {
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return false, nil
	}
	renewed := lease.CreationTimestamp.Time
	if s.RenewTime != nil {
		renewed = s.RenewTime.Time
	} else if s.AcquireTime != nil {
		renewed = s.AcquireTime.Time
	}
	d := time.Duration(utilptr.Deref(s.LeaseDurationSeconds, int32(DefaultDuration/time.Second))) * time.Second
	if l.now().After(renewed.Add(d)) {
		return false, nil
	}
	ann := lease.Annotations
	if host, _ := os.Hostname(); ann[lockHostAnnotation] == host && host != "" {
		if pid, err := strconv.Atoi(ann[lockPIDAnnotation]); err == nil && pid > 0 && !processExists(pid) {
			return false, nil
		}
		// Our own process, but no Set of it holds that identity any more: the operation ended
		// without deleting its Lease (its API server had gone away), so a re-run in the same
		// process need not wait. A Set of ours still running is live and refused.
		if ann[lockPIDAnnotation] == strconv.Itoa(os.Getpid()) && !liveHere(*s.HolderIdentity) {
			return false, nil
		}
	}
	e := &LockedError{Namespace: lease.Namespace, Name: lease.Name, Holder: *s.HolderIdentity, Operation: ann[lockOperationAnnotation],
		Target: ann[lockTargetAnnotation], Scope: ann[lockScopeAnnotation], Renewed: renewed, Duration: d}
	if s.AcquireTime != nil {
		e.Since = s.AcquireTime.Time
	}
	return true, e
}

func (l *Set) fill(lease *coordinationv1.Lease, now metav1.MicroTime, acquire bool) {
	host, _ := os.Hostname()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[lockOperationAnnotation] = l.info.Operation
	lease.Annotations[lockTargetAnnotation] = l.info.Target
	lease.Annotations[lockScopeAnnotation] = l.info.Scope
	lease.Annotations[lockHostAnnotation] = host
	lease.Annotations[lockPIDAnnotation] = strconv.Itoa(os.Getpid())
	lease.Spec.HolderIdentity = utilptr.To(l.identity)
	lease.Spec.LeaseDurationSeconds = utilptr.To(int32(l.duration / time.Second))
	if acquire {
		lease.Spec.AcquireTime = &now
	}
	lease.Spec.RenewTime = &now
}

// renewLoop renews every Lease each third of the duration until Release; a Lease found held by
// another process cancels the operation's context.
func (l *Set) renewLoop(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(max(l.duration/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.renew(ctx); err != nil && errors.Is(err, ErrLost) {
				l.mu.Lock()
				l.lost = err
				l.mu.Unlock()
				l.cancel(err)
				return
			}
		}
	}
}

func (l *Set) renew(ctx context.Context) error {
	nss := l.Namespaces()
	for _, ns := range nss {
		l.mu.Lock()
		lease := l.leases[ns].DeepCopy()
		l.mu.Unlock()
		l.fill(lease, metav1.NewMicroTime(l.now()), false)
		err := l.c.Update(ctx, lease)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Changed by someone else: still ours only if the holder is unchanged.
			cur := &coordinationv1.Lease{}
			if gerr := l.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.info.Name}, cur); gerr != nil || utilptr.Deref(cur.Spec.HolderIdentity, "") != l.identity {
				return fmt.Errorf("%w: namespace %s is now held by %q", ErrLost, ns, utilptr.Deref(cur.Spec.HolderIdentity, "nobody"))
			}
			l.fill(cur, metav1.NewMicroTime(l.now()), false)
			lease, err = cur, l.c.Update(ctx, cur)
		}
		if err != nil {
			return err // transient: the next tick tries again
		}
		l.mu.Lock()
		l.leases[ns] = lease
		l.mu.Unlock()
	}
	return nil
}

// Lost is the takeover that cancelled the operation, if any.
func (l *Set) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Release stops the renewal and deletes the Leases this process still holds (a fresh context:
// the operation's own may be why it stops).
func (l *Set) Release(ctx context.Context) {
	if l == nil {
		return
	}
	close(l.stop)
	<-l.done
	defer setLive(l.identity, false)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	nss := l.Namespaces()
	for _, ns := range nss {
		l.releaseOne(rctx, ns)
	}
}

func (l *Set) releaseOne(ctx context.Context, ns string) {
	cur := &coordinationv1.Lease{}
	if err := l.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.info.Name}, cur); err != nil {
		return
	}
	if utilptr.Deref(cur.Spec.HolderIdentity, "") != l.identity {
		return // taken over: not ours to delete
	}
	// Preconditions: delete exactly the Lease just read, not one another process wrote since.
	_ = l.c.Delete(ctx, cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
	l.mu.Lock()
	delete(l.leases, ns)
	l.mu.Unlock()
}

// Namespaces are the namespaces held.
func (l *Set) Namespaces() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.leases))
	for ns := range l.leases {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// live are the identities of this process's Sets that have not been released.
var (
	liveMu sync.Mutex
	live   = map[string]bool{}
)

func setLive(id string, on bool) {
	liveMu.Lock()
	defer liveMu.Unlock()
	if on {
		live[id] = true
	} else {
		delete(live, id)
	}
}

func liveHere(id string) bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	return live[id]
}
