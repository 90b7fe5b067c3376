package diagnose

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/kubeconfig"
)

// DefaultWorkloadTimeout bounds the whole read of a workload cluster.
const DefaultWorkloadTimeout = 5 * time.Second

// FetchWorkload reads the workload cluster through its kubeconfig Secret, read only and within
// timeout: its Nodes, the CNI DaemonSets, and the PodDisruptionBudgets that allow no disruption
// (with the Nodes their pods run on). A missing Secret or an API server that does not answer is
// reported in the result (Reachable false, Error), never as an error: it is itself a finding.
func FetchWorkload(ctx context.Context, c client.Client, namespace, name string, timeout time.Duration) *Workload {
	if timeout <= 0 {
		timeout = DefaultWorkloadTimeout
	}
	// The budget covers the kubeconfig Secret's read as well as the workload API server's.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := &Workload{}
	res, err := kubeconfig.Get(ctx, c, namespace, name)
	if err != nil {
		w.Error = err.Error()
		return w
	}
	w.Secret = res.Secret
	cfg, err := clientcmd.RESTConfigFromKubeConfig(res.Data)
	if err != nil {
		// The parse error may quote the file: do not repeat it (it holds credentials).
		w.Error = fmt.Sprintf("the kubeconfig in Secret %s/%s cannot be parsed", namespace, res.Secret)
		return w
	}
	cfg.Timeout = timeout
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		w.Error = fmt.Sprintf("building a client for the workload API server %s: %v", cfg.Host, err)
		return w
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		w.Error = fmt.Sprintf("cannot read the workload API server %s (kubeconfig Secret %s/%s): %v", cfg.Host, namespace, res.Secret, err)
		return w
	}
	w.Reachable = true
	for _, n := range nodes.Items {
		wn := Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Ready: "Unknown", Unschedulable: n.Spec.Unschedulable}
		for _, cd := range n.Status.Conditions {
			if cd.Type == corev1.NodeReady {
				wn.Ready, wn.Reason, wn.Message, wn.ReadySince = string(cd.Status), cd.Reason, cd.Message, cd.LastTransitionTime.Time
			}
		}
		w.Nodes = append(w.Nodes, wn)
	}

	// Reads after the first are best effort: what could not be read is said in Error.
	dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		w.Error = fmt.Sprintf("listing DaemonSets of the workload cluster: %v", err)
	} else {
		for _, d := range dss.Items {
			if IsCNIDaemonSet(d.Name) {
				w.CNI = append(w.CNI, DaemonSet{Namespace: d.Namespace, Name: d.Name, Desired: d.Status.DesiredNumberScheduled, Ready: d.Status.NumberReady})
			}
		}
	}
	pdbs, err := cs.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		w.Error = fmt.Sprintf("listing PodDisruptionBudgets of the workload cluster: %v", err)
		return w
	}
	for _, p := range pdbs.Items {
		if p.Status.DisruptionsAllowed > 0 || p.Status.ExpectedPods == 0 {
			continue
		}
		b := PDB{Namespace: p.Namespace, Name: p.Name, DisruptionsAllowed: p.Status.DisruptionsAllowed,
			CurrentHealthy: p.Status.CurrentHealthy, DesiredHealthy: p.Status.DesiredHealthy, ExpectedPods: p.Status.ExpectedPods}
		if p.Spec.Selector != nil {
			if sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector); err == nil {
				b.Selector = sel.String()
				pods, err := cs.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: b.Selector})
				if err == nil {
					seen := map[string]bool{}
					for _, pod := range pods.Items {
						if pod.Spec.NodeName != "" && !seen[pod.Spec.NodeName] {
							seen[pod.Spec.NodeName] = true
							b.Nodes = append(b.Nodes, pod.Spec.NodeName)
						}
					}
					sort.Strings(b.Nodes)
				}
			}
		}
		w.BlockingPDBs = append(w.BlockingPDBs, b)
	}
	return w
}

// WorkloadRecord keeps the workload clusters read while a support bundle's views were computed
// (Recording), and answers them again offline (Replay): a bundle holds no workload API server and
// no kubeconfig, only what was read through them.
type WorkloadRecord struct {
	mu sync.Mutex
	// Clusters are the reads by workloadKey: "context/namespace/name".
	Clusters map[string]*Workload `json:"clusters"`
}

// Recording is read, keeping each result.
func (r *WorkloadRecord) Recording(read WorkloadFunc) WorkloadFunc {
	return func(ctx context.Context, c client.Client, namespace, name string, timeout time.Duration) *Workload {
		w := read(ctx, c, namespace, name, timeout)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.Clusters == nil {
			r.Clusters = map[string]*Workload{}
		}
		r.Clusters[workloadKey(c, namespace, name)] = w
		return w
	}
}

// Replay answers from the record. A cluster whose workload was not read when the bundle was made
// is left unread (nil), as diagnose leaves one it does not need: never an unreachable finding
// the live cluster did not give.
func (r *WorkloadRecord) Replay() WorkloadFunc {
	return func(_ context.Context, c client.Client, namespace, name string, _ time.Duration) *Workload {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.Clusters[workloadKey(c, namespace, name)]
	}
}

// workloadKey names a workload cluster in a record: its management cluster's kubeconfig context
// (a bundle may hold several; the replay's client carries the same), namespace and name.
func workloadKey(c client.Client, namespace, name string) string {
	context := ""
	if cc, ok := c.(*cluster.Client); ok {
		context = cc.ContextName
	}
	return context + "/" + namespace + "/" + name
}
