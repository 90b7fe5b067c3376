package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/output"
	// Imported as mgmt: Get's parameter is named cluster, as the flag it comes from.
	mgmt "github.com/capctl/capctl/pkg/cluster"
)

// SecretKey is the key of the kubeconfig Secret that holds the kubeconfig.
const SecretKey = "value"

// SecretNames are the Secrets looked at, in order: the one Cluster API writes for every cluster,
// then the user kubeconfig some providers (EKS) write beside it.
func SecretNames(cluster string) []string {
	return []string{cluster + "-kubeconfig", cluster + "-user-kubeconfig"}
}

// Result is a workload cluster's kubeconfig and where it was read from.
type Result struct {
	Cluster   string
	Namespace string
	Secret    string
	// Data is the kubeconfig (a credential: never log it).
	Data []byte
}

// SecretNotFoundError says the Cluster exists but none of its kubeconfig Secrets do.
type SecretNotFoundError struct {
	Cluster, Namespace string
	Secrets            []string
}

func (e *SecretNotFoundError) Error() string {
	return fmt.Sprintf("cluster %q exists in namespace %q but its kubeconfig Secret %s was not found: the control plane may not be initialised yet (check `capctl describe cluster %s -n %s`)",
		e.Cluster, e.Namespace, quoteJoin(e.Secrets, " or "), e.Cluster, e.Namespace)
}

func quoteJoin(s []string, sep string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, sep)
}

// ErrNoClusterAPI means the management cluster does not serve the Cluster kind.
var ErrNoClusterAPI = errors.New("the management cluster does not serve Cluster API's Cluster kind (clusters.cluster.x-k8s.io); is this a management cluster? run `capctl init` first")

// Get reads the kubeconfig of cluster in namespace. The happy path costs one GET. When no
// kubeconfig Secret is found it reads the Cluster to tell a missing cluster from a missing Secret.
func Get(ctx context.Context, c client.Client, namespace, cluster string) (*Result, error) {
	for _, name := range SecretNames(cluster) {
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
		}
		data, ok := s.Data[SecretKey]
		if !ok || len(data) == 0 {
			return nil, fmt.Errorf("secret %s/%s has no %q key: it is not a Cluster API kubeconfig Secret", namespace, name, SecretKey)
		}
		return &Result{Cluster: cluster, Namespace: namespace, Secret: name, Data: data}, nil
	}
	clusters, err := ListClusters(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	for _, n := range clusters {
		if n == cluster {
			return nil, &SecretNotFoundError{Cluster: cluster, Namespace: namespace, Secrets: SecretNames(cluster)}
		}
	}
	return nil, &mgmt.ClusterNotFoundError{Name: cluster, Namespace: namespace, Existing: clusters,
		ElsewhereIn: mgmt.NamespacesWithCluster(ctx, c, c.RESTMapper(), cluster)}
}

// ListClusters returns the names of the Clusters in namespace, sorted (one LIST, metadata only).
func ListClusters(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	mapping, err := c.RESTMapper().RESTMapping(mgmt.ClusterGroupKind)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, ErrNoClusterAPI
		}
		return nil, fmt.Errorf("looking up the Cluster kind: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind("ClusterList"))
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, ErrNoClusterAPI
		}
		return nil, fmt.Errorf("listing clusters in namespace %q: %w", namespace, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		names = append(names, it.GetName())
	}
	sort.Strings(names)
	return names, nil
}

// WriteFile writes a kubeconfig to path, mode 0600 before any byte and atomically (an existing
// file's looser mode does not survive), since a kubeconfig is a credential.
func WriteFile(path string, data []byte) error {
	if err := output.WritePrivateFile(path, data); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}
