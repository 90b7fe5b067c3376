package topologyengine

import (
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/feature"
)

// Scheme is what the upstream topology code reads typed objects with: Kubernetes' kinds, CRDs,
// and Cluster API's core v1beta2 kinds. Providers' objects stay unstructured, as upstream reads
// them.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	_ = clusterv1.AddToScheme(s)
	return s
}

var gatesOnce sync.Once

// enableTopologyGate turns on the ClusterTopology feature gate in this process: the upstream
// webhooks refuse every topology object while it is off, as the controllers would (they run with
// it on wherever a ClusterClass is used). RuntimeSDK stays off: a class that needs a Runtime
// Extension is reported as not computed, never run half-way.
func enableTopologyGate() {
	gatesOnce.Do(func() {
		_ = feature.MutableGates.Set(string(feature.ClusterTopology) + "=true")
	})
}
