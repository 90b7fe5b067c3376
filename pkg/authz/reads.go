package authz

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Reads collects the kinds a command could not read, so that it can go on with the others: a
// destructive command then refuses (IncompleteError), a read command shows what it read and names
// what it did not. Safe for concurrent use; the zero value is ready.
type Reads struct {
	mu     sync.Mutex
	unread []Unreadable
}

// Tolerable tells whether a failed read concerns that one kind only, so the command may go on
// with the others: the API server answered (forbidden, a kind whose webhook or aggregated API is
// down, ...). A bad credential or an unreachable server is not: every read would fail alike.
func Tolerable(err error) bool {
	if err == nil || apierrors.IsUnauthorized(err) {
		return false
	}
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// forbiddenVerb finds the verb in the API server's Forbidden message ("... cannot list resource ...").
var forbiddenVerb = regexp.MustCompile(`cannot (\w+) resource`)

// FromError records a failed read whose resource and verb only the error knows (a read made by
// a lower layer): the resource from the status details, the verb from a Forbidden message.
func FromError(namespace string, err error) Unreadable {
	resource, verb := "unknown", "read"
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		if d := s.Status().Details; d != nil && d.Kind != "" {
			resource = d.Kind + "." + d.Group
		}
		if m := forbiddenVerb.FindStringSubmatch(s.Status().Message); m != nil {
			verb = m[1]
		}
	}
	return NewUnreadable(resource, namespace, verb, err)
}

// Add records a read that failed; the same read failing again (a kind read twice) is recorded once.
func (r *Reads) Add(u Unreadable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.unread {
		if x == u {
			return
		}
	}
	r.unread = append(r.unread, u)
}

// Note records a failed read of resource (plural.group) in namespace with verb when the failure
// is Tolerable, and returns nil then; it returns any other error as it is (nil stays nil).
func (r *Reads) Note(resource, namespace, verb string, err error) error {
	if !Tolerable(err) {
		return err
	}
	r.Add(NewUnreadable(resource, namespace, verb, err))
	return nil
}

// List lists into list (in namespace when one of opts is client.InNamespace) and reports whether
// it was read: a Tolerable failure is recorded and gives false, nil; any other is returned.
func (r *Reads) List(ctx context.Context, c client.Client, list client.ObjectList, opts ...client.ListOption) (bool, error) {
	err := c.List(ctx, list, opts...)
	if err == nil {
		return true, nil
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	return false, r.Note(ResourceOf(c, list), lo.Namespace, "list", err)
}

// Get reads one object and reports whether it was read, as List does (a NotFound is returned).
func (r *Reads) Get(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object) (bool, error) {
	err := c.Get(ctx, key, obj)
	if err == nil || apierrors.IsNotFound(err) {
		return err == nil, err
	}
	return false, r.Note(ResourceOf(c, obj), key.Namespace, "get", err)
}

// ResourceOf names the resource (plural.group) of an object or a list, from the client's
// scheme and REST mapper (no request once discovery is cached); Kind.group when it cannot be mapped.
func ResourceOf(c client.Client, obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		return strings.TrimSuffix(m.Resource.Resource+"."+gvk.Group, ".")
	}
	return strings.TrimSuffix(gvk.Kind+"."+gvk.Group, ".")
}

// Unread returns the recorded reads, sorted (nil when every read succeeded).
func (r *Reads) Unread() []Unreadable {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unread) == 0 {
		return nil
	}
	out := append([]Unreadable(nil), r.unread...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}
