package fleetupgrade

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
)

// Where and how the fleet apply records its rollouts: one ConfigMap per rollout in
// AuditNamespace of every management cluster it touches, labelled AuditLabel, the record as
// JSON under auditDataKey.
const (
	AuditNamespace = "capctl-system"
	AuditLabel     = "capctl.io/rollout"
	auditLabelKind = "fleet-upgrade"
	auditDataKey   = "record.json"
)

// Rollout states in a record.
const (
	RolloutRunning     = "Running"
	RolloutSucceeded   = "Succeeded"
	RolloutFailed      = "Failed" // every wave ran, some clusters failed (within --max-failures)
	RolloutStopped     = "Stopped"
	RolloutInterrupted = "Interrupted"
)

// ResultUpgrading is a cluster's result in a record while its upgrade runs: a record a killed
// run left says which clusters it was working on.
const ResultUpgrading = "Upgrading"

// RolloutRecord is the audit record of one fleet apply: who ran it, when, what plan, each wave
// with its start, end and gates, and each cluster's result. It is written before the first
// patch and after every step, so a run killed at any moment leaves a record true up to its
// last step (State Running then).
type RolloutRecord struct {
	Name string `json:"name"`
	// User and Groups are who the API server says ran it (SelfSubjectReview).
	User              string     `json:"user"`
	Groups            []string   `json:"groups,omitempty"`
	Started           time.Time  `json:"started"`
	Updated           time.Time  `json:"updated"`
	Finished          *time.Time `json:"finished,omitempty"`
	State             string     `json:"state"`
	KubernetesVersion string     `json:"kubernetesVersion"`
	// RolloutAfter is the time of a machine rotation (then KubernetesVersion is empty).
	RolloutAfter string `json:"rolloutAfter,omitempty"`
	// ClassRebase is a ClusterClass rebase, "namespace/old -> new" (then KubernetesVersion is
	// empty).
	ClassRebase string        `json:"classRebase,omitempty"`
	PlanDigest  string        `json:"planDigest,omitempty"`
	Selection   PlanSelection `json:"selection"`
	Rollout     Rollout       `json:"rollout"`
	Waves       []RecordWave  `json:"waves"`
	Stop        *FleetStop    `json:"stop,omitempty"`
	// ManagementCluster is the context the record was read from (set by History over several).
	ManagementCluster string `json:"managementCluster,omitempty"`
}

// RecordWave is one wave of a record.
type RecordWave struct {
	Wave     string          `json:"wave"`
	Started  *time.Time      `json:"started,omitempty"`
	Finished *time.Time      `json:"finished,omitempty"`
	Gates    []GateResult    `json:"gates,omitempty"`
	Clusters []RecordCluster `json:"clusters"`
}

// RecordCluster is one cluster's result in a record.
type RecordCluster struct {
	ManagementCluster string `json:"managementCluster,omitempty"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Result            string `json:"result"`
	// Step and Reason say where and why it failed or stopped.
	Step   string `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Predicted, Replaced and PredictionHeld are a ClusterClass rebase's (FleetStepReport).
	Predicted      []string `json:"predicted,omitempty"`
	Replaced       []string `json:"replaced,omitempty"`
	PredictionHeld *bool    `json:"predictionHeld,omitempty"`
}

// recorder keeps the record of a run and writes it to every management cluster it touches.
type recorder struct {
	mu      sync.Mutex
	clients map[string]client.Client
	objs    map[string]*corev1.ConfigMap
	rec     RolloutRecord
	warn    func(format string, args ...any)
}

// newRecorder asks the API server who runs the apply and writes the first record, before any
// patch; a record that cannot be written refuses the run.
func newRecorder(ctx context.Context, clients map[string]client.Client, plan *FleetPlan, req FleetApplyRequest, digest string, managementClusters []string) (*recorder, error) {
	touched := map[string]client.Client{}
	for _, w := range plan.Waves {
		for _, cu := range w.Clusters {
			touched[cu.ManagementCluster] = clients[cu.ManagementCluster]
		}
	}
	r := &recorder{clients: touched, objs: map[string]*corev1.ConfigMap{}, warn: req.Progress}
	now := time.Now().UTC().Truncate(time.Second)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	r.rec = RolloutRecord{
		Name: "fleet-upgrade-" + now.Format("20060102-150405") + "-" + hex.EncodeToString(suffix), Started: now, Updated: now, State: RolloutRunning,
		KubernetesVersion: req.KubernetesVersion, RolloutAfter: plan.RolloutAfter, ClassRebase: plan.ClassRebase, PlanDigest: digest, Rollout: req.Rollout,
		Selection: PlanSelection{Namespace: req.Selection.Namespace, Selector: req.Selection.Selector, Wave: req.Selection.Wave, ManagementClusters: managementClusters},
	}
	for _, w := range plan.Waves {
		rw := RecordWave{Wave: w.Name(), Clusters: make([]RecordCluster, len(w.Clusters))}
		for i, cu := range w.Clusters {
			rw.Clusters[i] = RecordCluster{ManagementCluster: cu.ManagementCluster, Namespace: cu.Namespace, Name: cu.Name, Result: ResultNotStarted}
		}
		r.rec.Waves = append(r.rec.Waves, rw)
	}
	names := make([]string, 0, len(touched))
	for n := range touched {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		user, groups, err := whoAmI(ctx, touched[n])
		if err != nil {
			return nil, inManagement(n, err)
		}
		if i == 0 {
			r.rec.User, r.rec.Groups = user, groups
		}
	}
	for _, n := range names {
		if err := r.writeTo(ctx, n); err != nil {
			return nil, inManagement(n, fmt.Errorf("the rollout's audit record could not be written, so nothing was changed: %w (the user needs to create and update ConfigMaps in namespace %s, and to create that namespace if it does not exist)", err, AuditNamespace))
		}
	}
	return r, nil
}

func inManagement(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("management cluster %s: %w", name, err)
}

// whoAmI is the user the API server authenticates the client as.
func whoAmI(ctx context.Context, c client.Client) (string, []string, error) {
	ssr := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, ssr); err != nil {
		return "", nil, fmt.Errorf("asking the API server who runs the apply (SelfSubjectReview, authentication.k8s.io/v1): %w", err)
	}
	return ssr.Status.UserInfo.Username, ssr.Status.UserInfo.Groups, nil
}

// update changes the record under the lock and writes it to every management cluster. A write
// that fails during the run is reported and retried at the next step; it does not stop a run
// that has started patching.
func (r *recorder) update(ctx context.Context, change func(*RolloutRecord)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.rec)
	r.rec.Updated = time.Now().UTC().Truncate(time.Second)
	// Ctrl-C must not keep the record from saying so.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for n := range r.clients {
		if err := r.writeTo(wctx, n); err != nil {
			r.warn("Warning: the audit record %s/%s could not be updated%s: %v (it is retried at the next step)", AuditNamespace, r.rec.Name, map[bool]string{true: "", false: " on " + n}[n == ""], err)
		}
	}
}

// writeTo creates or updates the record's ConfigMap in one management cluster (the namespace
// created when missing).
func (r *recorder) writeTo(ctx context.Context, management string) error {
	c := r.clients[management]
	data, err := json.MarshalIndent(r.rec, "", "  ")
	if err != nil {
		return err
	}
	if cm := r.objs[management]; cm != nil {
		cm.Data = map[string]string{auditDataKey: string(data)}
		return cluster.Retry(ctx, cluster.DefaultBackoff, func() error {
			err := c.Update(ctx, cm)
			if !apierrors.IsConflict(err) {
				return err
			}
			// Another writer moved the ConfigMap on (an annotation, a label): read it again and
			// write this run's record over its data, keeping what the other writer set.
			fresh := &corev1.ConfigMap{}
			if gerr := c.Get(ctx, client.ObjectKeyFromObject(cm), fresh); gerr != nil {
				return fmt.Errorf("%w (reading it again: %w)", err, gerr)
			}
			fresh.Data = cm.Data
			*cm = *fresh
			return cluster.Again(err)
		})
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AuditNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating namespace %s: %w", AuditNamespace, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: AuditNamespace, Name: r.rec.Name, Labels: map[string]string{AuditLabel: auditLabelKind}},
		Data:       map[string]string{auditDataKey: string(data)},
	}
	if err := c.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", AuditNamespace, r.rec.Name, err)
	}
	r.objs[management] = cm
	return nil
}

// finish records how the run ended.
func (r *recorder) finish(ctx context.Context, report *FleetApplyReport) {
	r.update(ctx, func(rec *RolloutRecord) {
		now := time.Now().UTC().Truncate(time.Second)
		rec.Finished = &now
		rec.Stop = report.Stop
		switch {
		case report.Interrupted:
			rec.State = RolloutInterrupted
		case report.Failure != nil, report.Stop != nil:
			rec.State = RolloutStopped
		case len(report.Failures) > 0:
			rec.State = RolloutFailed
		default:
			rec.State = RolloutSucceeded
		}
	})
}

// cluster records a cluster's result (ResultUpgrading when it starts), with the failure.
func (r *recorder) cluster(ctx context.Context, wave, i int, result string, f *FleetApplyFailure, steps []FleetStepReport) {
	r.update(ctx, func(rec *RolloutRecord) {
		c := &rec.Waves[wave].Clusters[i]
		c.Result = result
		if f != nil {
			c.Step, c.Reason = f.Step, f.Reason
		}
		for _, s := range steps {
			if s.Predicted != nil || s.Replaced != nil {
				c.Predicted, c.Replaced, c.PredictionHeld = s.Predicted, s.Replaced, s.PredictionHeld
			}
		}
	})
}

// wave records a wave's start, end and gates as its report has them.
func (r *recorder) wave(ctx context.Context, i int, wr *FleetWaveReport) {
	r.update(ctx, func(rec *RolloutRecord) {
		w := &rec.Waves[i]
		w.Started, w.Finished = utc(wr.Started), utc(wr.Finished)
		w.Gates = append([]GateResult(nil), wr.Gates...)
	})
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}
