package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientrest "k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"

	"github.com/capctl/capctl/pkg/cluster"
)

// listPageSize is how many objects one LIST request asks for. Large lists (a cluster's Machines,
// with their infrastructure and bootstrap objects in the ungrouped view) are read page by page so
// that only one page of the server's JSON is held at a time, which bounds the memory of a
// describe of thousands of machines; a cluster of up to this many machines still takes one
// request per kind.
var listPageSize = 2000

// restReader is a connection that can send a raw REST request (cluster.Client has it); describe
// then decodes lists itself, leanly, instead of through the generic unstructured decoder.
type restReader interface {
	REST() clientrest.Interface
}

// A list is decoded leanly (decodeList), into only what describe keeps. The generic decoder
// reads each item twice (once to find the list's kind, once per item) into maps, managedFields
// included, which is half of a Machine's JSON and read by nothing here; decoding into leanItem
// skips managedFields and reads each byte once.

// leanItem is one listed object: Cluster API objects (the only ones describe lists) hold their
// data in spec and status, kept whole; of the metadata everything but managedFields is kept.
type leanItem struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   leanMeta       `json:"metadata"`
	Spec       map[string]any `json:"spec"`
	Status     map[string]any `json:"status"`
}

// leanMeta is metav1.ObjectMeta without managedFields (and the long-gone selfLink).
type leanMeta struct {
	Name                       string                  `json:"name"`
	GenerateName               string                  `json:"generateName"`
	Namespace                  string                  `json:"namespace"`
	UID                        types.UID               `json:"uid"`
	ResourceVersion            string                  `json:"resourceVersion"`
	Generation                 int64                   `json:"generation"`
	CreationTimestamp          metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp          *metav1.Time            `json:"deletionTimestamp"`
	DeletionGracePeriodSeconds *int64                  `json:"deletionGracePeriodSeconds"`
	Labels                     map[string]string       `json:"labels"`
	Annotations                map[string]string       `json:"annotations"`
	OwnerReferences            []metav1.OwnerReference `json:"ownerReferences"`
	Finalizers                 []string                `json:"finalizers"`
}

// unstructured turns a lean item into the unstructured object the rest of describe reads.
func (it *leanItem) unstructured(gvk schema.GroupVersionKind) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{}}
	if it.APIVersion == "" || it.Kind == "" {
		u.SetGroupVersionKind(gvk)
	} else {
		u.SetAPIVersion(it.APIVersion)
		u.SetKind(it.Kind)
	}
	m := &it.Metadata
	u.SetName(m.Name)
	if m.GenerateName != "" {
		u.SetGenerateName(m.GenerateName)
	}
	if m.Namespace != "" {
		u.SetNamespace(m.Namespace)
	}
	if m.UID != "" {
		u.SetUID(m.UID)
	}
	if m.ResourceVersion != "" {
		u.SetResourceVersion(m.ResourceVersion)
	}
	if m.Generation != 0 {
		u.SetGeneration(m.Generation)
	}
	u.SetCreationTimestamp(m.CreationTimestamp)
	u.SetDeletionTimestamp(m.DeletionTimestamp)
	u.SetDeletionGracePeriodSeconds(m.DeletionGracePeriodSeconds)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	u.SetOwnerReferences(m.OwnerReferences)
	u.SetFinalizers(m.Finalizers)
	if it.Spec != nil {
		u.Object["spec"] = it.Spec
	}
	if it.Status != nil {
		u.Object["status"] = it.Status
	}
	return u
}

// listItems lists a kind in a namespace ("" for all namespaces), by label, page by page. Through
// a restReader it decodes each page leanly; any other reader lists through the generic client
// and drops managedFields, so both give the same objects.
func (d *discoverer) listItems(ctx context.Context, gvk schema.GroupVersionKind, namespace string, sel map[string]string) ([]unstructured.Unstructured, error) {
	rr, ok := d.c.(restReader)
	if !ok {
		return d.listGeneric(ctx, gvk, namespace, sel)
	}
	m, err := d.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	path := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		path = "/api/" + gvk.Version
	}
	if namespace != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
		path += "/namespaces/" + namespace
	}
	path += "/" + m.Resource.Resource
	var out []unstructured.Unstructured
	cont := ""
	for {
		req := rr.REST().Get().AbsPath(path).SetHeader("Accept", "application/json").
			Param("limit", strconv.Itoa(listPageSize))
		if len(sel) > 0 {
			req = req.Param("labelSelector", labels.SelectorFromSet(sel).String())
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return nil, err
		}
		cont, err = decodeList(body, func(it *leanItem) { out = append(out, it.unstructured(gvk)) })
		_ = body.Close()
		if err != nil {
			return nil, fmt.Errorf("decoding the list: %w", err)
		}
		if cont == "" {
			return out, nil
		}
	}
}

// decodeList reads one page of a list as it arrives, item by item: each item is decoded (and
// handed to each) while the server is still sending the ones after it, and only one item's JSON
// is held at a time. It returns the page's continue token.
func decodeList(body io.Reader, each func(*leanItem)) (string, error) {
	dec := sigsjson.NewDecoderCaseSensitivePreserveInts(body)
	if err := expectDelim(dec, '{'); err != nil {
		return "", err
	}
	var meta struct {
		Continue string `json:"continue"`
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch key {
		case "metadata":
			err = dec.Decode(&meta)
		case "items":
			err = decodeItems(dec, each)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return "", err
		}
	}
	return meta.Continue, expectDelim(dec, '}')
}

// decodeItems decodes a JSON array of items (or null) one item at a time.
func decodeItems(dec sigsjson.Decoder, each func(*leanItem)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("items: want an array, got %v", tok)
	}
	for dec.More() {
		var it leanItem
		if err := dec.Decode(&it); err != nil {
			return err
		}
		each(&it)
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec sigsjson.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %v, got %v", want, tok)
	}
	return nil
}

func (d *discoverer) listGeneric(ctx context.Context, gvk schema.GroupVersionKind, namespace string, sel map[string]string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := []client.ListOption{client.InNamespace(namespace)}
	if len(sel) > 0 {
		opts = append(opts, client.MatchingLabels(sel))
	}
	err := cluster.ListPages(ctx, d.c, gvk, int64(listPageSize), func(items []unstructured.Unstructured, restart bool) error {
		if restart {
			out = nil
		}
		for i := range items {
			items[i].SetManagedFields(nil)
		}
		out = append(out, items...)
		return nil
	}, opts...)
	return out, err
}
