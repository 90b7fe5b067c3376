package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/templates"
	"github.com/capctl/capctl/pkg/variables"
)

func init() { registerGenerateSubcommand(newGenerateClusterCmd) }

// Environment variable that points `--from` GitHub blob URLs at another raw-content host (tests).
const envGitHubRawURL = "CAPCTL_GITHUB_RAW_URL"

// variableFlags are --set and --values, shared by `generate cluster` and `generate yaml`.
type variableFlags struct {
	set        []string
	valuesFile string

	setVals    map[string]string
	valuesVals map[string]string
}

func (v *variableFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.set, "set", nil, "Set a variable, NAME=VALUE (repeatable); wins over --values, the environment and the config file")
	cmd.Flags().StringVar(&v.valuesFile, "values", "", "YAML file with a map of variables (NAME: value); wins over the environment and the config file")
}

// parse validates --set and reads --values (a local file: no network).
func (v *variableFlags) parse(reserved map[string]string) error {
	v.setVals = map[string]string{}
	for _, s := range v.set {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return usageErrorf("invalid --set %q: use NAME=VALUE", s)
		}
		if flag, ok := reserved[name]; ok {
			return usageErrorf("--set %s: %s is set by %s", name, name, flag)
		}
		v.setVals[name] = val
	}
	if v.valuesFile == "" {
		return nil
	}
	b, err := os.ReadFile(v.valuesFile)
	if err != nil {
		return fmt.Errorf("--values: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("--values %s: not a YAML map of variables: %w", v.valuesFile, err)
	}
	v.valuesVals = map[string]string{}
	for k, val := range raw {
		if flag, ok := reserved[k]; ok {
			return usageErrorf("--values %s: %s is set by %s", v.valuesFile, k, flag)
		}
		switch t := val.(type) {
		case nil:
			v.valuesVals[k] = ""
		case string:
			v.valuesVals[k] = t
		case map[string]any, []any:
			// A structured value is written as JSON on one line (valid YAML flow style), so that
			// `POD_CIDR: ["10.0.0.0/16"]` works as the template expects.
			j, err := yaml.Marshal(t)
			if err != nil {
				return err
			}
			jj, err := yaml.YAMLToJSON(j)
			if err != nil {
				return err
			}
			v.valuesVals[k] = string(jj)
		default:
			v.valuesVals[k] = fmt.Sprint(t)
		}
	}
	return nil
}

// lookup layers flags > values file > environment > config file under the built-ins.
func (v *variableFlags) lookup(builtins map[string]string, cfg *config.Config) variables.Lookup {
	return variables.Chain(variables.FromMap(builtins), variables.FromMap(v.setVals), variables.FromMap(v.valuesVals), variables.FromConfig(cfg))
}

type generateClusterOptions struct {
	name              string
	infrastructure    string
	flavor            string
	kubernetesVersion string
	cpCount           int64
	workerCount       int64
	targetNamespace   string
	from              string
	cmName            string
	cmNamespace       string
	cmKey             string
	listVariables     bool
	writeTo           string
	output            string
	offline           bool
	listFlavors       bool
	vars              variableFlags

	cpSet, workerSet bool
}

func newGenerateClusterCmd(f *factory) *cobra.Command {
	o := &generateClusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Generate the YAML of a workload cluster from a template",
		Long: `Generate the YAML of a workload cluster from a cluster template.

The template is a flavor of an infrastructure provider's repository (cluster-template[-FLAVOR].yaml),
or a file, URL or stdin (--from), or a ConfigMap (--from-config-map). Variables are taken from
--set, then --values, then the environment, then the config file. When the cluster uses a
ClusterClass of the provider that the management cluster does not have, the ClusterClass is
added to the output.`,
		Example: `  capctl generate cluster capi-quickstart --infrastructure docker:v1.14.0 --flavor development \
    --kubernetes-version v1.34.1 --worker-machine-count 3 > capi-quickstart.yaml
  capctl generate cluster c1 --from ./my-template.yaml --set POD_CIDR='["10.0.0.0/16"]' -o json
  capctl generate cluster c1 --infrastructure docker --flavor development --list-variables`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("please specify a cluster name")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			o.cpSet = cmd.Flags().Changed("control-plane-machine-count")
			o.workerSet = cmd.Flags().Changed("worker-machine-count")
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.infrastructure, "infrastructure", "i", "", "Infrastructure provider NAME[:VERSION] to take the template from. Default: the one installed in the management cluster")
	fl.StringVarP(&o.flavor, "flavor", "f", "", "Template flavor: reads cluster-template-FLAVOR.yaml (none: cluster-template.yaml)")
	fl.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Kubernetes version of the cluster (KUBERNETES_VERSION). Default: the environment or config, else the template's")
	fl.Int64Var(&o.cpCount, "control-plane-machine-count", 1, "Number of control plane machines (CONTROL_PLANE_MACHINE_COUNT); without the flag the environment or config may set it")
	fl.Int64Var(&o.workerCount, "worker-machine-count", 0, "Number of worker machines (WORKER_MACHINE_COUNT); without the flag the environment or config may set it")
	fl.StringVarP(&o.targetNamespace, "target-namespace", "n", "", "Namespace of the cluster's objects (NAMESPACE). Default: the kubeconfig context's namespace, else default")
	fl.StringVar(&o.from, "from", "", "Read the template from a file, an http(s) URL, a GitHub file URL (…/blob/REF/PATH) or - for stdin")
	fl.StringVar(&o.cmName, "from-config-map", "", "Read the template from this ConfigMap in the management cluster")
	fl.StringVar(&o.cmNamespace, "from-config-map-namespace", "", "Namespace of --from-config-map. Default: the kubeconfig context's namespace")
	fl.StringVar(&o.cmKey, "from-config-map-key", templates.DefaultConfigMapKey, "Data key of --from-config-map holding the template")
	fl.BoolVar(&o.listVariables, "list-variables", false, "List the variables the template needs (required, then optional with defaults) instead of generating")
	fl.StringVar(&o.writeTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	fl.StringVarP(&o.output, "output", "o", "yaml", "Output format: yaml or json (a v1 List)")
	fl.BoolVar(&o.listFlavors, "list-flavors", false, "List the flavors (templates) of the infrastructure provider version instead of generating")
	fl.BoolVar(&o.offline, "offline", false, "Read provider templates only from local repositories, the overrides folder and the cache (no network)")
	o.vars.add(cmd)
	return cmd
}

var builtinFlags = map[string]string{
	templates.VarClusterName:              "the cluster name argument",
	templates.VarNamespace:                "--target-namespace",
	templates.VarKubernetesVersion:        "--kubernetes-version",
	templates.VarControlPlaneMachineCount: "--control-plane-machine-count",
	templates.VarWorkerMachineCount:       "--worker-machine-count",
}

// validate checks every input that needs no network or cluster.
func (o *generateClusterOptions) validate() error {
	if errs := validation.IsDNS1123Label(o.name); len(errs) > 0 {
		return usageErrorf("invalid cluster name %q: %s", o.name, strings.Join(errs, "; "))
	}
	sources := 0
	for _, s := range []string{o.from, o.cmName} {
		if s != "" {
			sources++
		}
	}
	if sources > 1 {
		return usageErrorf("invalid cluster template source: only one of --from and --from-config-map can be used")
	}
	if sources == 1 && (o.infrastructure != "" || o.flavor != "") {
		return usageErrorf("invalid cluster template source: --infrastructure/--flavor pick a provider template and cannot be combined with --from or --from-config-map")
	}
	if o.cmName == "" && (o.cmNamespace != "" || o.cmKey != templates.DefaultConfigMapKey) {
		return usageErrorf("--from-config-map-namespace and --from-config-map-key need --from-config-map")
	}
	if o.infrastructure != "" {
		if _, err := provider.ParseReference(o.infrastructure, false); err != nil {
			return usageErrorf("--infrastructure: %v", err)
		}
	}
	if o.flavor != "" {
		if errs := validation.IsDNS1123Subdomain(o.flavor); len(errs) > 0 || strings.Contains(o.flavor, "/") {
			return usageErrorf("invalid --flavor %q: a flavor is a name like development", o.flavor)
		}
	}
	if o.kubernetesVersion != "" {
		if _, err := utilversion.ParseSemantic(o.kubernetesVersion); err != nil {
			return usageErrorf("invalid --kubernetes-version %q: use a semantic version like v1.34.1", o.kubernetesVersion)
		}
	}
	if o.cpSet && o.cpCount < 1 {
		return usageErrorf("invalid --control-plane-machine-count %d: use a number >= 1", o.cpCount)
	}
	if o.workerSet && o.workerCount < 0 {
		return usageErrorf("invalid --worker-machine-count %d: use a number >= 0", o.workerCount)
	}
	if o.targetNamespace != "" {
		if errs := validation.IsDNS1123Label(o.targetNamespace); len(errs) > 0 {
			return usageErrorf("invalid --target-namespace %q: %s", o.targetNamespace, strings.Join(errs, "; "))
		}
	}
	if o.output != "yaml" && o.output != "json" {
		return usageErrorf("invalid output format %q: use yaml or json", o.output)
	}
	if o.listVariables && o.writeTo != "" {
		return usageErrorf("--list-variables prints to stdout; it cannot be combined with --write-to")
	}
	if o.listFlavors && (sources > 0 || o.listVariables || o.flavor != "") {
		return usageErrorf("--list-flavors lists a provider's templates: it cannot be combined with --from, --from-config-map, --flavor or --list-variables")
	}
	return o.vars.parse(builtinFlags)
}

func (o *generateClusterOptions) run(ctx context.Context, f *factory) error {
	log := f.Logger()
	cfg, err := f.Config(ctx)
	if err != nil {
		return err
	}
	// The kubeconfig context's namespace is the default target namespace (no network needed).
	_, _, _, kubeNS, kerr := cluster.LoadRESTConfig(f.ClusterOptions())
	targetNS := o.targetNamespace
	if targetNS == "" {
		targetNS = kubeNS
		if targetNS == "" {
			targetNS = "default"
		}
	}
	builtins := map[string]string{templates.VarClusterName: o.name, templates.VarNamespace: targetNS}
	if o.kubernetesVersion != "" {
		builtins[templates.VarKubernetesVersion] = o.kubernetesVersion
	}
	counts := []struct {
		name    string
		set     bool
		val     int64
		def     int64
		min     int64
		flagRef string
	}{
		{templates.VarControlPlaneMachineCount, o.cpSet, o.cpCount, 1, 1, "--control-plane-machine-count"},
		{templates.VarWorkerMachineCount, o.workerSet, o.workerCount, 0, 0, "--worker-machine-count"},
	}
	for _, c := range counts {
		v := c.val
		if !c.set {
			v = c.def
			if s, ok := variables.Chain(variables.FromMap(o.vars.setVals), variables.FromMap(o.vars.valuesVals), variables.FromConfig(cfg))(c.name); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil || n < c.min {
					return fmt.Errorf("invalid %s %q from the environment or config: use a number >= %d (or pass %s)", c.name, s, c.min, c.flagRef)
				}
				v = n
			}
		}
		builtins[c.name] = strconv.FormatInt(v, 10)
	}

	req := templates.ClusterRequest{
		Source: templates.Source{
			From: o.from, ConfigMap: o.cmName, ConfigMapNamespace: o.cmNamespace, ConfigMapKey: o.cmKey,
			Infrastructure: o.infrastructure, Flavor: o.flavor,
		},
		TargetNamespace: targetNS,
		Lookup:          o.vars.lookup(builtins, cfg),
		ListOnly:        o.listVariables,
		Fetch: templates.FetchOptions{
			Stdin: f.IO.In, GitHubToken: cfg.GitHubToken(), RawGitHubURL: os.Getenv(envGitHubRawURL), Log: f.Logger(),
		},
	}
	// The management cluster: required for a ConfigMap source and for defaulting the
	// infrastructure provider; otherwise used when reachable (inventory version, ClusterClass
	// checks), and not needed at all for --from.
	repoSource := o.from == "" && o.cmName == ""
	needCluster := o.cmName != "" || (repoSource && o.infrastructure == "")
	if needCluster || (repoSource && kerr == nil) {
		c, err := f.Cluster(ctx)
		switch {
		case err == nil:
			req.Cluster = c
		case o.cmName != "":
			return fmt.Errorf("--from-config-map needs the management cluster: %w", err)
		case needCluster:
			return fmt.Errorf("no management cluster to find the default infrastructure provider in (%v): pass --infrastructure NAME[:VERSION]", err)
		default:
			log.V(1).Info("Management cluster not reachable; ClusterClasses are not looked up in it", "error", err.Error())
		}
	}
	if o.cmName != "" && o.cmNamespace == "" {
		req.Source.ConfigMapNamespace = kubeNS
		if req.Source.ConfigMapNamespace == "" {
			req.Source.ConfigMapNamespace = "default"
		}
	}
	if repoSource {
		rc, err := f.repositoryClient(ctx, o.offline)
		if err != nil {
			return err
		}
		req.Repository = rc
	}

	if o.listFlavors {
		fl, err := templates.ListFlavors(ctx, req)
		if err != nil {
			return err
		}
		if o.output == "json" {
			b, err := json.MarshalIndent(fl, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(f.IO.Out, string(b))
			return nil
		}
		if len(fl.Flavors) == 0 {
			fmt.Fprintf(f.IO.ErrOut, "%s %s publishes no cluster templates\n", fl.Provider, fl.Version)
			return nil
		}
		for _, fv := range fl.Flavors {
			if fv == "" {
				fv = "(default)"
			}
			fmt.Fprintln(f.IO.Out, fv)
		}
		return nil
	}
	res, err := templates.GenerateCluster(ctx, req)
	if err != nil {
		var me *variables.MissingError
		if errors.As(err, &me) {
			return fmt.Errorf("value for variables [%s] is not set: set them with --set NAME=VALUE, a --values file, environment variables or the config file (see --list-variables)", strings.Join(me.Names, ", "))
		}
		return err
	}
	if res.Provider != "" {
		log.V(1).Info("Using template", "provider", res.Provider, "version", res.Version, "file", res.TemplateName)
	}
	for _, c := range res.ExistingClasses {
		log.V(1).Info("ClusterClass already in the management cluster, not emitted", "clusterClass", c.String())
	}
	if o.listVariables {
		return printClusterVariables(f.IO.Out, res.Variables, o, targetNS)
	}
	return writeObjects(f, res.Objects, o.output, o.writeTo)
}

// printClusterVariables prints clusterctl's --list-variables layout: required names, then
// optional names with their defaults (built-ins show the value capctl will use).
func printClusterVariables(w io.Writer, vars []variables.Variable, o *generateClusterOptions, targetNS string) error {
	values := map[string]*string{}
	for _, v := range vars {
		var d *string
		if !v.Required {
			s := v.Default
			if s != "" && !strings.HasPrefix(s, `"`) {
				s = strconv.Quote(s)
			}
			d = &s
		}
		switch v.Name {
		case templates.VarClusterName:
			d = ptr(o.name)
		case templates.VarNamespace:
			if o.targetNamespace != "" {
				d = ptr(o.targetNamespace)
			} else {
				d = ptr(targetNS + " (the kubeconfig context's namespace)")
			}
		case templates.VarControlPlaneMachineCount:
			d = ptr(countDisplay(o.cpSet, o.cpCount, v.Name, "1"))
		case templates.VarWorkerMachineCount:
			d = ptr(countDisplay(o.workerSet, o.workerCount, v.Name, "0"))
		case templates.VarKubernetesVersion:
			if o.kubernetesVersion != "" {
				d = ptr(o.kubernetesVersion)
			} else if s, ok := os.LookupEnv(v.Name); ok {
				d = ptr(s)
			}
		}
		values[v.Name] = d
	}
	var required, optional []string
	for name, d := range values {
		if d == nil {
			required = append(required, name)
		} else {
			optional = append(optional, name)
		}
	}
	sort.Strings(required)
	sort.Strings(optional)
	if len(required) > 0 {
		fmt.Fprintln(w, "Required Variables:")
		for _, n := range required {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if len(optional) > 0 {
		fmt.Fprintln(w, "\nOptional Variables:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.FilterHTML)
		for _, n := range optional {
			fmt.Fprintf(tw, "  - %s\t(defaults to %s)\n", n, *values[n])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return nil
}

func countDisplay(set bool, val int64, name, def string) string {
	if set {
		return strconv.FormatInt(val, 10)
	}
	if s, ok := os.LookupEnv(name); ok {
		return s
	}
	return def
}

func ptr(s string) *string { return &s }

// writeObjects prints objects as YAML or JSON to stdout or into a 0600 file.
func writeObjects(f *factory, objs []unstructured.Unstructured, output, writeTo string) error {
	var b []byte
	var err error
	if output == "json" {
		b, err = templates.JSON(objs)
	} else {
		b, err = templates.YAML(objs)
	}
	if err != nil {
		return err
	}
	if writeTo == "" || writeTo == "-" {
		_, err = f.IO.Out.Write(b)
		return err
	}
	p := filepath.Clean(writeTo)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	// WriteFile keeps the mode of an existing file; templates may hold secrets.
	if err := os.Chmod(p, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "Wrote %d objects to %s\n", len(objs), p)
	return nil
}
