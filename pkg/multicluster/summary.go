package multicluster

// ManagementCluster is the per-management-cluster summary of every view over several of them.
type ManagementCluster struct {
	// Name is the kubeconfig context.
	Name      string `json:"name"`
	Reachable bool   `json:"reachable"`
	// Error says why the management cluster could not be read (unreachable, contract check,
	// a failed read); its clusters are not in the view then.
	Error string `json:"error,omitempty"`
	// Contract is the version its Cluster CRD stores (the Cluster API contract it speaks).
	Contract  string     `json:"contract,omitempty"`
	Providers []Provider `json:"providers"`
	// Clusters is how many workload clusters the view shows from it; Problems how many of them
	// have one (what a problem is depends on the command: not Available, a finding, ...).
	Clusters int `json:"clusters"`
	Problems int `json:"problems"`
}

// Provider is one installed provider of a management cluster.
type Provider struct {
	// Name is the manifest label (cluster-api, infrastructure-docker, ...).
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   string `json:"version"`
	// Contract is the Cluster API contract its CRDs declare, when the command read it.
	Contract string `json:"contract,omitempty"`
}

// Summary is what every multi-management-cluster document carries beside its rows.
type Summary struct {
	ManagementClusters []ManagementCluster `json:"managementClusters"`
	// Drift lists the providers whose version or contract differs between management clusters
	// (get providers and upgrade plan only).
	Drift []Drift `json:"drift,omitempty"`
}

// Exit codes of the commands over several management clusters (docs/guides/multi-management.md).
const (
	ExitOK = 0
	// ExitFailed: the command itself failed (bad flags, a refused selection).
	ExitFailed = 1
	// ExitProblems: some workload cluster has a problem (the commands that judge: diagnose).
	ExitProblems = 2
	// ExitUnreadable: some management cluster could not be read; the others are shown complete.
	ExitUnreadable = 3
	// ExitIncomplete: the view is partial: some kind could not be read (RBAC) on a management
	// cluster that answered; what could be read is shown and what could not is named. It shares
	// ExitUnreadable's number: either way the view is incomplete (docs/guides/permissions.md).
	ExitIncomplete = ExitUnreadable
)

// ViewExit is the exit code of a read command's view: ExitIncomplete when it is partial (which
// outranks what it shows), else ExitProblems when judge is set and it shows a problem, else ExitOK.
func ViewExit(complete, problems, judge bool) int {
	switch {
	case !complete:
		return ExitIncomplete
	case judge && problems:
		return ExitProblems
	}
	return ExitOK
}

// ExitCode is the run's exit code: ExitUnreadable when any management cluster could not be read
// (the view is incomplete, which outranks what it shows), else ExitProblems when judge is set
// and any cluster has a problem, else ExitOK.
func ExitCode(ms []ManagementCluster, judge bool) int {
	return ExitCodeOf(ms, true, judge)
}

// ExitCodeOf is ExitCode when the views of the management clusters that answered may themselves
// be partial (complete false: some kind could not be read on one of them).
func ExitCodeOf(ms []ManagementCluster, complete, judge bool) int {
	problems := false
	for _, m := range ms {
		if !m.Reachable || m.Error != "" {
			return ExitUnreadable
		}
		problems = problems || m.Problems > 0
	}
	return ViewExit(complete, problems, judge)
}
