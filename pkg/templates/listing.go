package templates

import (
	"sort"
	"strconv"
	"strings"

	"github.com/capctl/capctl/pkg/variables"
)

// VariableListing is `generate cluster --list-variables`: the variables a template needs without
// a default, then those with one and the value generation would use.
type VariableListing struct {
	Required []string           `json:"required"`
	Optional []OptionalVariable `json:"optional"`
}

// OptionalVariable is a variable with the value it gets when the user sets nothing more.
type OptionalVariable struct {
	Name string `json:"name"`
	// Default is the template's default in clusterctl's notation (quoted), or, for a built-in,
	// the value capctl resolved (from the flags, the environment, the config file or the
	// kubeconfig) with a note on where it came from.
	Default string `json:"default"`
}

// listVariables builds the listing from the template's variables and the resolved built-ins, so
// that it shows what generation uses.
func listVariables(vars []variables.Variable, req *ClusterRequest, res *Resolved) *VariableListing {
	l := &VariableListing{Required: []string{}, Optional: []OptionalVariable{}}
	for _, v := range vars {
		d, ok := builtinDisplay(v.Name, req, res)
		if !ok && !v.Required {
			d, ok = v.Default, true
			if d != "" && !strings.HasPrefix(d, `"`) {
				d = strconv.Quote(d)
			}
		}
		if ok {
			l.Optional = append(l.Optional, OptionalVariable{Name: v.Name, Default: d})
		} else {
			l.Required = append(l.Required, v.Name)
		}
	}
	sort.Strings(l.Required)
	sort.Slice(l.Optional, func(i, j int) bool { return l.Optional[i].Name < l.Optional[j].Name })
	return l
}

// builtinDisplay is the value of a built-in variable as resolved; ok is false for a variable that
// is not a built-in, and for KUBERNETES_VERSION when nobody set it (the template decides).
func builtinDisplay(name string, req *ClusterRequest, res *Resolved) (string, bool) {
	switch name {
	case VarClusterName:
		return req.Name, true
	case VarNamespace:
		if res.NamespaceFrom == NamespaceFromFlag {
			return res.Namespace, true
		}
		return res.Namespace + " (" + res.NamespaceFrom + ")", true
	case VarControlPlaneMachineCount:
		return strconv.FormatInt(res.ControlPlaneMachineCount, 10), true
	case VarWorkerMachineCount:
		return strconv.FormatInt(res.WorkerMachineCount, 10), true
	case VarKubernetesVersion:
		return res.KubernetesVersion, res.KubernetesVersion != ""
	}
	return "", false
}
