package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitEstablished waits until every named CRD has condition Established=True, or returns an
// error naming those that are not (and why) after timeout.
func WaitEstablished(ctx context.Context, c client.Client, crdNames []string, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return WatchCRDs(ctx, c, crdNames, timeout).Wait(crdNames...)
}

// WaitServed waits until mapper maps gvk: Established does not mean discoverable yet, and on a
// busy API server a request right after a CRD was Established can still fail with "no matches
// for kind". It returns ErrTimedOut after timeout.
func WaitServed(ctx context.Context, mapper meta.RESTMapper, gvk schema.GroupVersionKind, timeout time.Duration) error {
	return Poll(ctx, 100*time.Millisecond, timeout, func(context.Context) (bool, error) {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, nil
	})
}

// CRDWatch follows CRDs until each is Established, so that a caller can wait for the few it needs
// now and for the rest later. With a client that can watch (Client's can) it watches each
// CRD by name: it learns of each change as it happens and reads each CRD about twice (its state
// when the watch starts, then the change that established it) instead of every CRD again on every
// poll. Otherwise it polls.
type CRDWatch struct {
	timeout  time.Duration
	mu       sync.Mutex
	pending  map[string]string        // name → why it is not Established yet
	done     map[string]chan struct{} // closed when the CRD is Established
	finished chan struct{}            // closed when every CRD is Established or time ran out
}

// WatchCRDs starts following names; it stops when ctx ends or after timeout.
func WatchCRDs(ctx context.Context, c client.Client, names []string, timeout time.Duration) *CRDWatch {
	w := &CRDWatch{timeout: timeout, pending: map[string]string{}, done: map[string]chan struct{}{}, finished: make(chan struct{})}
	for _, n := range names {
		if _, dup := w.done[n]; !dup {
			w.pending[n] = "not read yet"
			w.done[n] = make(chan struct{})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	go func() {
		defer close(w.finished)
		defer cancel()
		if wc := watcher(c); wc != nil {
			w.watchAll(ctx, wc)
		} else {
			w.poll(ctx, c)
		}
	}()
	return w
}

// Wait returns when every named CRD is Established, or with an error naming those that are not
// (and why) when time ran out. Names the watch does not follow are ignored.
func (w *CRDWatch) Wait(names ...string) error {
	for _, n := range names {
		ch, ok := w.done[n]
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-w.finished:
			select {
			case <-ch:
			default:
				return w.err()
			}
		}
	}
	return nil
}

func (w *CRDWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.pending))
	for n, why := range w.pending {
		keys = append(keys, n+" ("+why+")")
	}
	sort.Strings(keys)
	return fmt.Errorf("CustomResourceDefinitions not established within %s: %s", w.timeout, strings.Join(keys, ", "))
}

// set records the state of one CRD; why "" means Established.
func (w *CRDWatch) set(n, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[n]; !ok {
		return
	}
	if why != "" {
		w.pending[n] = why
		return
	}
	delete(w.pending, n)
	close(w.done[n])
}

func (w *CRDWatch) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.pending))
	for n := range w.pending {
		out = append(out, n)
	}
	return out
}

// watcher returns the watching client behind c, if it has one.
func watcher(c client.Client) client.WithWatch {
	if cc, ok := c.(*Client); ok {
		c = cc.Client
	}
	wc, _ := c.(client.WithWatch)
	return wc
}

// establishedState says whether crd is Established, and if not, why.
func establishedState(crd *apiextensionsv1.CustomResourceDefinition) (bool, string) {
	why := "not established"
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true, ""
		}
		if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
			why = "names not accepted: " + cond.Message
		}
	}
	return false, why
}

func (w *CRDWatch) poll(ctx context.Context, c client.Client) {
	_ = Poll(ctx, 100*time.Millisecond, w.timeout, func(ctx context.Context) (bool, error) {
		names := w.names()
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				w.set(n, err.Error())
				continue
			}
			_, why := establishedState(crd)
			w.set(n, why)
		}
		return len(w.names()) == 0, nil
	})
}

// watchAll watches every pending CRD by name, all at once (over HTTP/2 they share one
// connection). A watch the server ends, or that fails, is opened again; the new one starts with
// the CRD's current state.
func (w *CRDWatch) watchAll(ctx context.Context, wc client.WithWatch) {
	var wg sync.WaitGroup
	for _, n := range w.names() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				wi, err := wc.Watch(ctx, &apiextensionsv1.CustomResourceDefinitionList{}, client.MatchingFields{"metadata.name": n})
				if err != nil {
					w.set(n, err.Error())
					_ = Sleep(ctx, 200*time.Millisecond) // ctx done ends the loop
					continue
				}
				established := false
				for ev := range wi.ResultChan() {
					crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
					switch {
					case ev.Type == watch.Deleted:
						w.set(n, "deleted")
					case ok:
						var why string
						established, why = establishedState(crd)
						w.set(n, why)
					}
					if established {
						break
					}
				}
				wi.Stop()
				if established {
					return
				}
			}
		}()
	}
	wg.Wait()
}
