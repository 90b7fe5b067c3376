package diagnose

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/provider"
)

// DefaultStuckAfter is how long an object may stay in a transitional state (Pending,
// Provisioning, Deleting, ...) before a rule calls it stuck.
const DefaultStuckAfter = 10 * time.Minute

// Input is everything the rules look at. Fetch builds it from a management cluster; tests build
// it by hand.
type Input struct {
	// Now is the clock the rules measure "since" against.
	Now time.Time
	// StuckAfter: objects in a transitional state for longer than this are stuck (default 10m).
	StuckAfter time.Duration

	// Tree is the describe tree of the cluster, ungrouped and with every machine's
	// infrastructure and bootstrap objects (describe.ClusterRequest{Grouping: false, Echo: true}).
	Tree *describe.Tree
	// Cluster holds what the rules need from the Cluster that the tree does not keep.
	Cluster ClusterFacts
	// Machines by name: fields of each Machine that the tree does not keep.
	Machines map[string]MachineFacts
	// KindCRDs maps "Kind.group" of the tree's objects to their CRD name ("plural.group"), so
	// that an object can be traced to the provider that installed its CRD.
	KindCRDs map[string]string

	// Management is the management side; nil when it was not read.
	Management *Management
	// Workload is what was read from the workload cluster; nil when it was not read at all.
	Workload *Workload
}

// ClusterFacts are Cluster fields the describe tree does not keep.
type ClusterFacts struct {
	// ControlPlaneEndpoint is spec.controlPlaneEndpoint as host:port ("" while unset).
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	// PausedByAnnotation: the cluster.x-k8s.io/paused annotation (as opposed to spec.paused).
	PausedByAnnotation bool `json:"pausedByAnnotation,omitempty"`
	SpecPaused         bool `json:"specPaused,omitempty"`
	// MovePaused: capctl move paused it (annotation capctl.cluster.x-k8s.io/move-paused).
	MovePaused bool `json:"movePaused,omitempty"`
}

// MachineFacts are Machine fields the describe tree does not keep.
type MachineFacts struct {
	Name         string    `json:"name"`
	Phase        string    `json:"phase,omitempty"`
	NodeName     string    `json:"nodeName,omitempty"` // status.nodeRef.name
	ProviderID   string    `json:"providerID,omitempty"`
	DataSecret   string    `json:"dataSecretName,omitempty"` // spec.bootstrap.dataSecretName
	BootstrapOK  bool      `json:"bootstrapDataSecretCreated,omitempty"`
	InfraOK      bool      `json:"infrastructureProvisioned,omitempty"`
	ControlPlane bool      `json:"controlPlane,omitempty"`
	Created      time.Time `json:"created,omitzero"`
	Deleted      time.Time `json:"deletionTimestamp,omitzero"`
}

// ClusterFactsFrom reads ClusterFacts from a Cluster object (either API generation).
func ClusterFactsFrom(u *unstructured.Unstructured) ClusterFacts {
	host, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host")
	port, _, _ := unstructured.NestedInt64(u.Object, "spec", "controlPlaneEndpoint", "port")
	f := ClusterFacts{}
	if host != "" {
		f.ControlPlaneEndpoint = host
		if port != 0 {
			f.ControlPlaneEndpoint = host + ":" + strconv.FormatInt(port, 10)
		}
	}
	_, f.PausedByAnnotation = u.GetAnnotations()["cluster.x-k8s.io/paused"]
	f.SpecPaused, _, _ = unstructured.NestedBool(u.Object, "spec", "paused")
	_, f.MovePaused = u.GetAnnotations()["capctl.cluster.x-k8s.io/move-paused"]
	return f
}

// MachineFactsFrom reads MachineFacts from a Machine (v1beta2, or v1beta1 where the readiness
// flags are status.bootstrapReady / status.infrastructureReady).
func MachineFactsFrom(u *unstructured.Unstructured) MachineFacts {
	s := func(p ...string) string { v, _, _ := unstructured.NestedString(u.Object, p...); return v }
	b := func(p ...string) bool { v, _, _ := unstructured.NestedBool(u.Object, p...); return v }
	m := MachineFacts{
		Name: u.GetName(), Phase: s("status", "phase"), NodeName: s("status", "nodeRef", "name"),
		ProviderID: s("spec", "providerID"), DataSecret: s("spec", "bootstrap", "dataSecretName"),
		BootstrapOK: b("status", "initialization", "bootstrapDataSecretCreated") || b("status", "bootstrapReady"),
		InfraOK:     b("status", "initialization", "infrastructureProvisioned") || b("status", "infrastructureReady"),
		Created:     u.GetCreationTimestamp().Time,
	}
	_, m.ControlPlane = u.GetLabels()["cluster.x-k8s.io/control-plane"]
	if m.DataSecret != "" {
		m.BootstrapOK = true
	}
	if d := u.GetDeletionTimestamp(); d != nil {
		m.Deleted = d.Time
	}
	return m
}

// Management is the state of the management cluster's providers.
type Management struct {
	// CoreContract is the Cluster API contract of the core provider (its CRDs' labels).
	CoreContract string           `json:"coreContract,omitempty"`
	Providers    []ProviderStatus `json:"providers"`
	// CertManager is nil when it was not checked.
	CertManager *CertManagerStatus `json:"certManager,omitempty"`
	// Unread are the kinds that could not be read (RBAC): the view is incomplete.
	Unread []authz.Unreadable `json:"unread,omitempty"`
	// NotChecked are the checks not made for any provider (check → why: "cannot read ..."),
	// because a kind every provider needs could not be read.
	NotChecked map[string]string `json:"notChecked,omitempty"`
	// CRDProviders maps a CRD name to the manifest label of the provider that installed it
	// (its cluster.x-k8s.io/provider label).
	CRDProviders map[string]string `json:"-"`
}

// ProviderStatus is one inventory entry with what the cluster says about it.
type ProviderStatus struct {
	Name          string        `json:"name"` // provider name (e.g. kubeadm)
	Type          provider.Type `json:"type"`
	Version       string        `json:"version"`
	Namespace     string        `json:"namespace"`
	ManifestLabel string        `json:"manifestLabel"` // e.g. bootstrap-kubeadm
	// Contract is the newest Cluster API contract its CRDs declare (cluster.x-k8s.io/<contract>
	// labels); "" when none of its CRDs carries one.
	Contract string `json:"contract,omitempty"`
	// ContractCompatible: Contract is one the core's contract accepts.
	ContractCompatible bool     `json:"contractCompatible"`
	CRDs               []string `json:"crds,omitempty"`

	Deployments []DeploymentStatus `json:"deployments,omitempty"`
	// ControllerAvailable: every Deployment of the provider is Available (false without any).
	ControllerAvailable bool `json:"controllerAvailable"`
	// Webhooks are the provider's webhook Services (and CA injections) with their state.
	Webhooks []Check `json:"webhooks,omitempty"`
	// WebhookAnswers is nil when the provider has no webhook, else whether every check passed.
	WebhookAnswers *bool `json:"webhookAnswers,omitempty"`
	// NotChecked are this provider's checks that were not made (check → why), beside those of
	// Management.NotChecked: ControllerAvailable, WebhookAnswers and Contract then say nothing.
	NotChecked map[string]string `json:"notChecked,omitempty"`
}

// The checks a kind that cannot be read leaves undone (keys of NotChecked).
const (
	checkInventory  = "inventory"
	checkController = "controller"
	checkWebhook    = "webhook"
	checkContract   = "contract"
)

// Partial tells whether some kind the management side reads could not be read: the view misses it.
func (m *Management) Partial() bool { return len(m.Unread) > 0 }

func notCheckedReason(u authz.Unreadable) string { return "cannot read " + u.String() }

func (m *Management) notCheck(check string, u authz.Unreadable) {
	if m.NotChecked == nil {
		m.NotChecked = map[string]string{}
	}
	if _, done := m.NotChecked[check]; !done {
		m.NotChecked[check] = notCheckedReason(u)
	}
}

func (p *ProviderStatus) notCheck(check string, u authz.Unreadable) {
	if p.NotChecked == nil {
		p.NotChecked = map[string]string{}
	}
	if _, done := p.NotChecked[check]; !done {
		p.NotChecked[check] = notCheckedReason(u)
	}
}

// NotCheckedWhy says why a check of provider p was not made ("" when it was made). A nil
// Management checked nothing, but says so elsewhere (Report.ManagementError).
func (m *Management) NotCheckedWhy(p *ProviderStatus, check string) string {
	if m == nil {
		return ""
	}
	if why := m.NotChecked[check]; why != "" {
		return why
	}
	if why := m.NotChecked[checkInventory]; why != "" {
		return why
	}
	if p != nil {
		return p.NotChecked[check]
	}
	return ""
}

// DeploymentStatus is one controller Deployment of a provider.
type DeploymentStatus struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	// Reason says why it is not available (conditions, pods), empty when it is.
	Reason string `json:"reason,omitempty"`
	// ScaledToZero: spec.replicas is 0 (Available as far as the Deployment goes, but nothing runs).
	ScaledToZero bool `json:"scaledToZero,omitempty"`
	// Since is when its Available condition last changed.
	Since time.Time `json:"since,omitzero"`
	// Concurrency are the --*-concurrency container arguments (flag name → value).
	Concurrency map[string]string `json:"concurrency,omitempty"`
}

// Check is one webhook or CA-injection check.
type Check struct {
	Object string `json:"object"`
	What   string `json:"what"`
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// CertManagerStatus is the cert-manager the providers' webhooks get their certificates from.
type CertManagerStatus struct {
	Installed bool    `json:"installed"`
	Version   string  `json:"version,omitempty"`
	Ready     bool    `json:"ready"`
	Checks    []Check `json:"checks,omitempty"`
	// NotChecked says what of cert-manager could not be read: Ready then says nothing.
	NotChecked []string `json:"notChecked,omitempty"`
}

// Provider returns the provider with a manifest label, if installed.
func (m *Management) Provider(manifestLabel string) (*ProviderStatus, bool) {
	if m == nil {
		return nil, false
	}
	for i := range m.Providers {
		if m.Providers[i].ManifestLabel == manifestLabel {
			return &m.Providers[i], true
		}
	}
	return nil, false
}

// Workload is what was read from the workload cluster through its kubeconfig Secret.
type Workload struct {
	// Reachable is false when the kubeconfig Secret is missing or the API server did not answer;
	// Error then says why.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Secret    string `json:"secret,omitempty"`
	Nodes     []Node `json:"nodes,omitempty"`
	// CNI are the DaemonSets recognised as a CNI plugin.
	CNI []DaemonSet `json:"cni,omitempty"`
	// BlockingPDBs are PodDisruptionBudgets that allow no disruption now.
	BlockingPDBs []PDB `json:"blockingPDBs,omitempty"`
}

// Node is a workload cluster Node and its Ready condition.
type Node struct {
	Name          string    `json:"name"`
	ProviderID    string    `json:"providerID,omitempty"`
	Ready         string    `json:"ready"` // True, False, Unknown
	Reason        string    `json:"reason,omitempty"`
	Message       string    `json:"message,omitempty"`
	ReadySince    time.Time `json:"readySince,omitzero"`
	Unschedulable bool      `json:"unschedulable,omitempty"`
}

// DaemonSet is a CNI DaemonSet with its readiness.
type DaemonSet struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
}

// PDB is a PodDisruptionBudget that allows no disruption, and the Nodes its pods run on.
type PDB struct {
	Namespace          string   `json:"namespace"`
	Name               string   `json:"name"`
	DisruptionsAllowed int32    `json:"disruptionsAllowed"`
	CurrentHealthy     int32    `json:"currentHealthy"`
	DesiredHealthy     int32    `json:"desiredHealthy"`
	ExpectedPods       int32    `json:"expectedPods"`
	Selector           string   `json:"selector,omitempty"`
	Nodes              []string `json:"nodes,omitempty"`
}

// NodeNamed returns the workload Node of that name.
func (w *Workload) NodeNamed(name string) (*Node, bool) {
	if w == nil {
		return nil, false
	}
	for i := range w.Nodes {
		if w.Nodes[i].Name == name {
			return &w.Nodes[i], true
		}
	}
	return nil, false
}

// CNIRunning tells whether some CNI DaemonSet has a ready pod.
func (w *Workload) CNIRunning() bool {
	for _, d := range w.CNI {
		if d.Ready > 0 {
			return true
		}
	}
	return false
}

// cniNames are DaemonSet names (or prefixes) of common CNI plugins.
var cniNames = []string{
	"calico-node", "cilium", "kube-flannel", "flannel", "weave-net", "kindnet", "antrea-agent",
	"kube-router", "canal", "ovnkube-node", "aws-node", "azure-cni", "kube-ovn-cni", "multus",
}

// IsCNIDaemonSet recognises a CNI plugin's DaemonSet by its name.
func IsCNIDaemonSet(name string) bool {
	for _, n := range cniNames {
		if name == n || strings.HasPrefix(name, n+"-") || strings.HasPrefix(name, n) && n == "cilium" {
			return true
		}
	}
	return false
}
