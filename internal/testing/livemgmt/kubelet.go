package livemgmt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// NodeName is the one Node each management cluster has: this host, where the kubelet stand-in
// runs the providers' pods as processes.
const NodeName = "livemgmt-host"

// The kubelet stand-in: what a kubelet (and the scheduler, for binding) does for the providers'
// pods, and nothing more. kube-controller-manager makes the pods from init's Deployments; this
// binds them to the Node, runs the container's manager binary (chosen by the image's name and
// tag) with the container's own args and env, mounts its Secret volumes as folders, probes
// /readyz and reports the pod's status. Pods are deleted by the controllers; the stand-in stops
// the process and finishes the deletion, as a kubelet does after the grace period.
type kubelet struct {
	c *Cluster
	// r reads what the sync loop looks at every second (pods, Services, EndpointSlices,
	// Secrets, Certificates, CRDs) from informers: one watch per kind instead of a LIST per kind
	// per second, which was most of an idle management cluster's API server CPU. Writes, the
	// heartbeat, Secret mounts and webhook configurations go to the API server directly. A read
	// may lag a write by a moment; every step of the loop is level-based and runs again a second
	// later.
	r    client.Reader
	log  *os.File
	pods map[types.UID]*container
	// last status fingerprint written per pod, to write only changes
	written map[types.UID]string
	// resourceVersion of each object whose CA bundle was checked
	injected      map[string]string
	lastHeartbeat time.Time
}

// container is the process running one pod's manager container.
type container struct {
	pod      types.NamespacedName
	uid      types.UID
	name     string // container name
	image    string
	label    string // provider label, "" if the image is no manager the harness knows
	binVer   string // version of the binary set that runs it
	shared   bool   // CAPD: the host's one CAPD process serves this pod
	proc     *process
	ports    map[string]int // container port name -> host port
	ready    atomic.Bool
	started  time.Time
	restarts int
	next     time.Time // earliest next start
	waiting  [2]string // reason, message while not running
	lastExit string
}

func newKubelet(c *Cluster, r client.Reader) *kubelet {
	f, _ := os.OpenFile(filepath.Join(c.Dir, "kubelet-standin.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	return &kubelet{c: c, r: r, log: f, pods: map[types.UID]*container{}, written: map[types.UID]string{}, injected: map[string]string{}}
}

func (k *kubelet) logf(format string, args ...any) {
	if k.log != nil {
		fmt.Fprintf(k.log, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

func (k *kubelet) run(ctx context.Context) {
	defer func() {
		for _, ct := range k.pods {
			k.stopContainer(ct)
		}
		if k.log != nil {
			k.log.Close()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := k.sync(ctx); err != nil && ctx.Err() == nil {
			k.logf("sync: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (k *kubelet) sync(ctx context.Context) error {
	if err := k.heartbeat(ctx); err != nil {
		return fmt.Errorf("node heartbeat: %w", err)
	}
	if err := k.syncCertificates(ctx); err != nil {
		k.logf("certificates: %v", err)
	}
	if err := k.syncPods(ctx); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	if err := k.syncEndpoints(ctx); err != nil {
		k.logf("endpoints: %v", err)
	}
	if err := k.injectCA(ctx); err != nil {
		k.logf("CA injection: %v", err)
	}
	k.publishPIDs()
	return nil
}

// publishPIDs records which process runs each provider's manager, for ManagerPID.
func (k *kubelet) publishPIDs() {
	pids := map[string]int{}
	for _, ct := range k.pods {
		if ct.proc != nil && !ct.proc.exited() && ct.label != "" {
			pids[ct.label] = ct.proc.cmd.Process.Pid
		}
	}
	k.c.pidMu.Lock()
	k.c.pids = pids
	k.c.pidMu.Unlock()
}

// heartbeat registers the Node and renews its Lease and Ready condition, so the node lifecycle
// controller keeps the pods bound to it.
func (k *kubelet) heartbeat(ctx context.Context) error {
	if time.Since(k.lastHeartbeat) < 10*time.Second {
		return nil
	}
	cl := k.c.Client
	now := metav1.Now()
	node := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: NodeName}, node); apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{
			"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "node-role.kubernetes.io/control-plane": "",
		}}}
		if err := cl.Create(ctx, node); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "livemgmt kubelet stand-in is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && !c.LastTransitionTime.IsZero() {
			node.Status.Conditions[0].LastTransitionTime = c.LastTransitionTime
		}
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.c.podIP()}, {Type: corev1.NodeHostName, Address: NodeName}}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Allocatable = node.Status.Capacity
	if err := cl.Status().Update(ctx, node); err != nil {
		return err
	}
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: NodeName}
	renew := metav1.NewMicroTime(time.Now())
	if err := cl.Get(ctx, key, lease); apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: NodeName, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(NodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &renew},
		}
		if err := cl.Create(ctx, lease); err != nil {
			return err
		}
	} else if err != nil {
		return err
	} else {
		lease.Spec.RenewTime = &renew
		if err := cl.Update(ctx, lease); err != nil {
			return err
		}
	}
	k.lastHeartbeat = time.Now()
	return nil
}

func (k *kubelet) syncPods(ctx context.Context) error {
	cl := k.c.Client
	pods := &corev1.PodList{}
	if err := k.r.List(ctx, pods); err != nil {
		return err
	}
	seen := map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		seen[p.UID] = true
		switch {
		case p.DeletionTimestamp != nil:
			if ct := k.pods[p.UID]; ct != nil {
				k.logf("pod %s/%s deleted: stopping its container", p.Namespace, p.Name)
				k.stopContainer(ct)
				delete(k.pods, p.UID)
			}
			if p.Spec.NodeName == NodeName || p.Spec.NodeName == "" {
				err := cl.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					k.logf("finishing the deletion of pod %s/%s: %v", p.Namespace, p.Name, err)
				}
			}
		case p.Spec.NodeName == "":
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
			if err := cl.SubResource("binding").Create(ctx, p, b); err != nil && !apierrors.IsConflict(err) {
				k.logf("binding pod %s/%s: %v", p.Namespace, p.Name, err)
			}
		case p.Spec.NodeName != NodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		default:
			ct := k.pods[p.UID]
			if ct == nil {
				ct = k.newContainer(p)
				k.pods[p.UID] = ct
			}
			k.runContainer(ctx, p, ct)
			if err := k.writeStatus(ctx, p, ct); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				k.logf("status of pod %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
	}
	for uid, ct := range k.pods {
		if !seen[uid] {
			k.stopContainer(ct)
			delete(k.pods, uid)
		}
	}
	return nil
}

func (k *kubelet) newContainer(p *corev1.Pod) *container {
	ct := &container{pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, uid: p.UID}
	for _, c := range p.Spec.Containers {
		name, _ := parseImage(c.Image)
		if l, ok := imageLabels[name]; ok {
			ct.name, ct.image, ct.label = c.Name, c.Image, l
			break
		}
	}
	if ct.label == "" {
		ct.name, ct.image = p.Spec.Containers[0].Name, p.Spec.Containers[0].Image
		ct.waiting = [2]string{"ImageNotRunnable", "the live management harness runs only the Cluster API managers it has binaries for, not " + ct.image}
	}
	// CAPD's ports are fixed: on a shared network the host's one CAPD process serves this pod.
	ct.shared = ct.label == LabelDocker && k.c.ns == nil
	return ct
}

// runContainer starts the container's process when it is not running (with a kubelet-like
// back-off after crashes), or notes that it exited.
func (k *kubelet) runContainer(ctx context.Context, p *corev1.Pod, ct *container) {
	if ct.label == "" {
		return
	}
	if ct.shared {
		k.c.host.claimCAPD(ctx, k, p, ct)
		return
	}
	if ct.proc != nil {
		if !ct.proc.exited() {
			return
		}
		ct.ready.Store(false)
		ct.lastExit = ct.proc.exitReason()
		k.logf("pod %s: %s", ct.pod, ct.lastExit)
		ct.restarts++
		backoff := time.Duration(1<<min(ct.restarts, 6)) * time.Second
		if ct.proc.portInUse() {
			backoff = 0 // another port next time
		}
		ct.next = time.Now().Add(backoff)
		ct.waiting = [2]string{"CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container: %s", backoff, ct.lastExit)}
		ct.proc = nil
	}
	if time.Now().Before(ct.next) {
		return
	}
	proc, ports, err := k.startManager(ctx, p, ct, nil)
	if err != nil {
		ct.waiting = [2]string{"ContainerCreating", err.Error()}
		ct.next = time.Now().Add(2 * time.Second)
		return
	}
	ct.proc, ct.ports, ct.started, ct.waiting = proc, ports, time.Now(), [2]string{}
	k.probe(ct, proc)
}

// probe marks the container ready once the manager's /readyz answers.
func (k *kubelet) probe(ct *container, proc *process) {
	url := fmt.Sprintf("http://%s:%d/readyz", k.c.healthHost(), ct.ports["healthz"])
	go func() {
		if err := proc.waitHTTP(context.Background(), url, 3*time.Minute); err == nil {
			ct.ready.Store(true)
		}
	}()
}

// startManager runs the manager binary for a pod's container: the container's args with the
// host's overrides (free ports, the mounted certificate folder, no leader election, no metrics
// listener), its env with the downward-API fields resolved, and the cluster's kubeconfig.
func (k *kubelet) startManager(ctx context.Context, p *corev1.Pod, ct *container, extraEnv []string) (*process, map[string]int, error) {
	var spec *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == ct.name {
			spec = &p.Spec.Containers[i]
		}
	}
	_, tag := parseImage(ct.image)
	bin, ver, err := managerBinary(ct.label, tag)
	if err != nil {
		return nil, nil, err
	}
	ct.binVer = ver
	podDir := filepath.Join(k.c.Dir, "pods", p.Namespace+"_"+p.Name)
	if err := os.MkdirAll(podDir, 0o700); err != nil {
		return nil, nil, err
	}
	mounts, err := k.mountSecrets(ctx, p, spec, podDir)
	if err != nil {
		return nil, nil, err
	}
	webhookPort, err := hostPorts.get()
	if err != nil {
		return nil, nil, err
	}
	healthPort, err := hostPorts.get()
	if err != nil {
		return nil, nil, err
	}
	args := append([]string(nil), spec.Args...)
	args = append(args,
		"--leader-elect=false",
		"--diagnostics-address=0",
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		fmt.Sprintf("--health-addr=%s:%d", k.c.healthHost(), healthPort),
	)
	if d, ok := mounts["/tmp/k8s-webhook-server/serving-certs"]; ok {
		args = append(args, "--webhook-cert-dir="+d)
	}
	env := testenv.ServerEnv([]string{"KUBECONFIG=" + k.c.Kubeconfig, "HOME=" + podDir, "PATH=" + os.Getenv("PATH")})
	for _, e := range spec.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.namespace":
				env = append(env, e.Name+"="+p.Namespace)
			case "metadata.name":
				env = append(env, e.Name+"="+p.Name)
			case "metadata.uid":
				env = append(env, e.Name+"="+string(p.UID))
			case "status.podIP", "status.hostIP":
				// CAPD's in-memory workload API servers advertise this address: loopback, inside
				// the cluster's namespace (or the host's), where its core and control-plane
				// managers reach them. Every CAPD advertises the same one, as CAPD requires of a
				// cluster that moves between them (its listeners are restored by host and port).
				env = append(env, e.Name+"=127.0.0.1")
			}
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	env = append(env, extraEnv...)
	logPath := filepath.Join(k.c.Dir, fmt.Sprintf("%s-%s.log", ct.label, p.Name))
	name := fmt.Sprintf("%s manager %s (pod %s/%s)", ct.label, ver, p.Namespace, p.Name)
	if k.c.ns != nil {
		bin, args = k.c.ns.command(bin, args)
	}
	proc, err := startProcess(name, bin, args, env, logPath)
	if err != nil {
		return nil, nil, err
	}
	k.logf("pod %s/%s: started %s %s (pid %d, webhook :%d, health :%d, log %s)", p.Namespace, p.Name, ct.label, ver, proc.cmd.Process.Pid, webhookPort, healthPort, logPath)
	return proc, map[string]int{"webhook-server": webhookPort, "healthz": healthPort}, nil
}

// mountSecrets writes each Secret volume the container mounts into a folder, as the kubelet
// mounts it, and returns mountPath -> folder.
func (k *kubelet) mountSecrets(ctx context.Context, p *corev1.Pod, spec *corev1.Container, podDir string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range spec.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			s := &corev1.Secret{}
			if err := k.c.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: v.Secret.SecretName}, s); err != nil {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q: secret %q: %v", v.Name, v.Secret.SecretName, err)
			}
			dir := filepath.Join(podDir, "volumes", v.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			for name, data := range s.Data {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					return nil, err
				}
			}
			out[m.MountPath] = dir
		}
	}
	return out, nil
}

func (k *kubelet) stopContainer(ct *container) {
	if ct.shared {
		k.c.host.releaseCAPD(k.c, ct.uid)
		return
	}
	if ct.proc != nil {
		ct.proc.stop(10 * time.Second)
		ct.proc = nil
	}
	ct.ready.Store(false)
}

// running reports the container's state: running (and ready), or why it waits.
func (k *kubelet) state(ct *container) (running, ready bool, started time.Time, restarts int, why [2]string, ports map[string]int) {
	if ct.shared {
		return k.c.host.capdState(ct)
	}
	if ct.proc != nil && !ct.proc.exited() {
		return true, ct.ready.Load(), ct.started, ct.restarts, [2]string{}, ct.ports
	}
	return false, false, time.Time{}, ct.restarts, ct.waiting, nil
}

// writeStatus reports the pod's status as a kubelet would, when it changed.
func (k *kubelet) writeStatus(ctx context.Context, p *corev1.Pod, ct *container) error {
	running, ready, started, restarts, why, _ := k.state(ct)
	fp := fmt.Sprintf("%v/%v/%d/%s/%s/%s", running, ready, restarts, why[0], why[1], started)
	if k.written[p.UID] == fp {
		return nil
	}
	now := metav1.Now()
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		c := corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
		for _, old := range p.Status.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		if !ok && (t == corev1.PodReady || t == corev1.ContainersReady) {
			c.Reason = "ContainersNotReady"
			c.Message = "containers with unready status: [" + ct.name + "]"
		}
		return c
	}
	cs := corev1.ContainerStatus{Name: ct.name, Image: ct.image, ImageID: "livemgmt://" + ct.label + "@" + ct.binVer,
		Ready: ready, Started: ptr.To(running), RestartCount: int32(restarts)}
	if running {
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}
	} else {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: why[0], Message: why[1]}
	}
	if ct.lastExit != "" {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: ct.lastExit}
	}
	st := p.Status.DeepCopy()
	st.Phase = corev1.PodPending
	if running || restarts > 0 {
		st.Phase = corev1.PodRunning
	}
	st.HostIP = k.c.podIP()
	st.HostIPs = []corev1.HostIP{{IP: k.c.podIP()}}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, true),
		cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready),
	}
	st.ContainerStatuses = []corev1.ContainerStatus{cs}
	for _, c := range p.Spec.Containers {
		if c.Name != ct.name {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImageNotRunnable", Message: "not a Cluster API manager the harness can run"}}})
		}
	}
	p2 := p.DeepCopy()
	p2.Status = *st
	if err := k.c.Client.Status().Update(ctx, p2); err != nil {
		return err
	}
	k.written[p.UID] = fp
	return nil
}

// podMatches: a Service selector against the pods the stand-in runs in its namespace.
func (k *kubelet) podsFor(ns string, sel map[string]string, pods []corev1.Pod) []*corev1.Pod {
	if len(sel) == 0 {
		return nil
	}
	s := labels.SelectorFromSet(sel)
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace == ns && k.pods[p.UID] != nil && p.DeletionTimestamp == nil && s.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// isNoMatch: the API (a CRD such as cert-manager's) is not installed (yet).
func isNoMatch(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || strings.Contains(err.Error(), "no matches for kind")
}
