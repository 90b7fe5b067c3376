// Package provider is the Cluster API provider model shared by every other package: the seven
// provider types, their order and labels, and the references users type on the command line.
package provider

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Type is a provider type as clusterctl writes it in the inventory and the config file.
type Type string

// The provider types, in clusterctl's install/upgrade/listing order.
const (
	CoreProviderType             Type = "CoreProvider"
	BootstrapProviderType        Type = "BootstrapProvider"
	ControlPlaneProviderType     Type = "ControlPlaneProvider"
	InfrastructureProviderType   Type = "InfrastructureProvider"
	IPAMProviderType             Type = "IPAMProvider"
	RuntimeExtensionProviderType Type = "RuntimeExtensionProvider"
	AddonProviderType            Type = "AddonProvider"
)

// CoreProviderName is the only name allowed for the core provider.
const CoreProviderName = "cluster-api"

// Types lists every provider type in order.
var Types = []Type{
	CoreProviderType, BootstrapProviderType, ControlPlaneProviderType, InfrastructureProviderType,
	IPAMProviderType, RuntimeExtensionProviderType, AddonProviderType,
}

type typeInfo struct {
	order  int
	prefix string // manifest label prefix; empty for the core provider
	file   string // default components file name
	flag   string // the command-line flag users name this type with
}

var typeInfos = map[Type]typeInfo{
	CoreProviderType:             {0, "", "core-components.yaml", "--core"},
	BootstrapProviderType:        {1, "bootstrap-", "bootstrap-components.yaml", "--bootstrap"},
	ControlPlaneProviderType:     {2, "control-plane-", "control-plane-components.yaml", "--control-plane"},
	InfrastructureProviderType:   {3, "infrastructure-", "infrastructure-components.yaml", "--infrastructure"},
	IPAMProviderType:             {4, "ipam-", "ipam-components.yaml", "--ipam"},
	RuntimeExtensionProviderType: {5, "runtime-extension-", "runtime-extension-components.yaml", "--runtime-extension"},
	AddonProviderType:            {6, "addon-", "addon-components.yaml", "--addon"},
}

// ParseType accepts a type as written in the config file or the inventory.
func ParseType(s string) (Type, error) {
	t := Type(s)
	if _, ok := typeInfos[t]; ok {
		return t, nil
	}
	names := make([]string, 0, len(Types))
	for _, t := range Types {
		names = append(names, string(t))
	}
	return "", fmt.Errorf("invalid provider type %q: must be one of %s", s, strings.Join(names, ", "))
}

// Valid reports whether t is one of the seven known types.
func (t Type) Valid() bool { _, ok := typeInfos[t]; return ok }

// Order is the install and listing order of the type (core first).
func (t Type) Order() int { return typeInfos[t].order }

// ComponentsFile is the default components file name of the type.
func (t Type) ComponentsFile() string { return typeInfos[t].file }

// Short is the type as release files and OCI artifacts name it: core, bootstrap, control-plane,
// infrastructure, ipam, runtime-extension, addon ("" for an unknown type).
func (t Type) Short() string {
	if t == CoreProviderType {
		return "core"
	}
	return strings.TrimSuffix(typeInfos[t].prefix, "-")
}

// Flag is the command-line flag that names providers of this type.
func (t Type) Flag() string { return typeInfos[t].flag }

// FlagShorthand is the one-letter form of Flag, as clusterctl has it (-b, -c, -i), or "".
func (t Type) FlagShorthand() string {
	switch t {
	case BootstrapProviderType:
		return "b"
	case ControlPlaneProviderType:
		return "c"
	case InfrastructureProviderType:
		return "i"
	}
	return ""
}

// ManifestLabel is the value of the `cluster.x-k8s.io/provider` label for a provider, which is also
// the name of its inventory object and of its folder in a local repository (`infrastructure-aws`).
func ManifestLabel(name string, t Type) string {
	if t == CoreProviderType {
		return CoreProviderName
	}
	return typeInfos[t].prefix + name
}

// ParseManifestLabel splits a manifest label back into type and name (`control-plane-kubeadm`).
func ParseManifestLabel(label string) (Type, string, bool) {
	if label == CoreProviderName {
		return CoreProviderType, CoreProviderName, true
	}
	// Longest prefix first: "runtime-extension-" must not be read as something shorter.
	best := Type("")
	for t, info := range typeInfos {
		if info.prefix != "" && strings.HasPrefix(label, info.prefix) && len(info.prefix) > len(typeInfos[best].prefix) {
			best = t
		}
	}
	if best == "" || len(label) == len(typeInfos[best].prefix) {
		return "", "", false
	}
	return best, strings.TrimPrefix(label, typeInfos[best].prefix), true
}

// LabelReference is a provider named by its manifest label with an optional version,
// `infrastructure-aws:v2.8.1` (the arguments of `repository mirror` and `repository cache clean`).
type LabelReference struct {
	Label, Name, Version string
	Type                 Type
}

// ParseLabelReference parses LABEL[:VERSION]; a version, when given, must be semantic (latest
// only where allowLatest).
func ParseLabelReference(s string, allowLatest bool) (LabelReference, error) {
	label, version, hasVersion := strings.Cut(s, ":")
	t, name, ok := ParseManifestLabel(label)
	if !ok {
		return LabelReference{}, fmt.Errorf("%q is not a provider label: use TYPE-NAME[:VERSION] such as cluster-api, bootstrap-kubeadm, infrastructure-aws:v2.8.1", s)
	}
	if hasVersion {
		if err := ValidateVersion(version); err != nil || version == "" || (version == "latest" && !allowLatest) {
			return LabelReference{}, fmt.Errorf("invalid provider %q: the version after ':' must look like v1.2.3", s)
		}
	}
	return LabelReference{Label: label, Name: name, Version: version, Type: t}, nil
}

// Reference is a provider named on the command line: `name`, `name:version` or, where the
// provider is already installed, `namespace/name:version`.
type Reference struct {
	Namespace string
	Name      string
	Version   string // empty means "latest"
}

func (r Reference) String() string {
	s := r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	if r.Version != "" {
		s += ":" + r.Version
	}
	return s
}

// ParseReference parses `name[:version]`; with allowNamespace also `namespace/name[:version]`.
// Names are lower-cased DNS-1123 labels; a version, when given, must look like vX.Y.Z or "latest".
func ParseReference(s string, allowNamespace bool) (Reference, error) {
	const form = "name[:version]"
	want := form
	if allowNamespace {
		want = "[namespace/]" + form
	}
	bad := func(why string) (Reference, error) {
		return Reference{}, fmt.Errorf("invalid provider reference %q: %s; use the form %s, e.g. aws:v2.8.1", s, why, want)
	}
	var ref Reference
	rest := strings.TrimSpace(s)
	if i := strings.Index(rest, "/"); i >= 0 {
		if !allowNamespace {
			return bad("a namespace is not accepted here")
		}
		ref.Namespace, rest = rest[:i], rest[i+1:]
		if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
			return bad("namespace " + strings.Join(errs, "; "))
		}
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 2 {
		return bad("more than one ':'")
	}
	ref.Name = strings.ToLower(parts[0])
	if ref.Name == "" {
		return bad("the name is empty")
	}
	if errs := validation.IsDNS1123Label(ref.Name); len(errs) > 0 {
		return bad("name " + strings.Join(errs, "; "))
	}
	if len(parts) == 2 {
		if parts[1] == "" {
			return bad("the version after ':' is empty")
		}
		if err := ValidateVersion(parts[1]); err != nil {
			return bad(err.Error())
		}
		ref.Version = parts[1]
	}
	return ref, nil
}

// ValidateVersion accepts "latest" and full semantic versions with an optional leading v.
func ValidateVersion(v string) error {
	if v == "latest" {
		return nil
	}
	if !semverLike(strings.TrimPrefix(v, "v")) {
		return fmt.Errorf("version %q is not a semantic version like v1.2.3", v)
	}
	return nil
}

// semverLike checks MAJOR.MINOR.PATCH[-pre][+build] with numeric parts; "1.2.x" is refused.
func semverLike(v string) bool {
	core := v
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return false
	}
	for _, n := range nums {
		if n == "" {
			return false
		}
		for _, c := range n {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// SortByTypeThenName orders items the way clusterctl lists providers.
func SortByTypeThenName[T any](items []T, typeOf func(T) Type, nameOf func(T) string) {
	sort.SliceStable(items, func(i, j int) bool {
		oi, oj := typeOf(items[i]).Order(), typeOf(items[j]).Order()
		if oi != oj {
			return oi < oj
		}
		return nameOf(items[i]) < nameOf(items[j])
	})
}
