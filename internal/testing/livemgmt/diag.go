package livemgmt

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Diagnose says what a stuck workload cluster looks like: capctl's describe tree (when capctl
// names a binary), the providers' pods, and the last lines of every process log of the
// management cluster. Tests print it when a wait times out.
func (h *Host) Diagnose(ctx context.Context, c *Cluster, capctl, namespace, cluster string) string {
	var b strings.Builder
	if capctl != "" && cluster != "" {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(cctx, capctl, "describe", "cluster", cluster, "-n", namespace,
			"--show-conditions", "all", "--kubeconfig", c.Kubeconfig).CombinedOutput()
		cancel()
		fmt.Fprintf(&b, "--- capctl describe cluster %s -n %s (management cluster %s)", cluster, namespace, c.Name)
		if err != nil {
			fmt.Fprintf(&b, " (%v)", err)
		}
		fmt.Fprintf(&b, "\n%s\n", out)
	}
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods); err == nil {
		fmt.Fprintf(&b, "--- pods on %s\n", c.Name)
		for _, p := range pods.Items {
			state := string(p.Status.Phase)
			for _, cs := range p.Status.ContainerStatuses {
				switch {
				case cs.State.Waiting != nil:
					state += fmt.Sprintf(" %s waiting %s: %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
				case cs.Ready:
					state += " ready"
				default:
					state += " not ready"
				}
			}
			fmt.Fprintf(&b, "%s/%s %s\n", p.Namespace, p.Name, state)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		if strings.HasSuffix(l, "etcd.log") {
			continue
		}
		fmt.Fprintf(&b, "--- last lines of %s\n%s\n", l, lastLines(l, 12))
	}
	return b.String()
}
