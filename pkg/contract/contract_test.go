package contract

import (
	"context"
	"errors"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func clusterCRD(storage string, others ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: ClusterCRD}}
	for _, v := range others {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
	}
	if storage != "" {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: storage, Served: true, Storage: true})
	}
	return crd
}

func reader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		core, provider string
		want           bool
	}{
		{"v1beta2", "v1beta2", true},
		{"v1beta2", "v1beta1", true},
		{"v1beta2", "v1alpha4", false},
		{"v1beta1", "v1beta1", true},
		{"v1beta1", "v1beta2", false},
	} {
		if got := IsCompatible(tc.core, tc.provider); got != tc.want {
			t.Errorf("IsCompatible(%s, %s) = %v, want %v", tc.core, tc.provider, got, tc.want)
		}
	}
	if !Usable("v1beta1") || Usable("v1alpha4") {
		t.Errorf("Usable: v1beta1 must be usable, v1alpha4 not")
	}
}

func TestStorageVersion(t *testing.T) {
	if got := StorageVersion(clusterCRD("v1beta2", "v1beta1")); got != "v1beta2" {
		t.Errorf("StorageVersion = %q, want v1beta2", got)
	}
	if got := StorageVersion(clusterCRD("", "v1beta1")); got != "" {
		t.Errorf("StorageVersion without a storage version = %q, want empty", got)
	}
}

// TestCheckManagementCluster pins clusterctl v1.14's rule: the Cluster CRD must store v1beta2;
// only init/generate accept a cluster without Cluster API, only upgrade accepts v1beta1.
func TestCheckManagementCluster(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		opts    []CheckOption
		wantErr error
	}{
		{name: "v1beta2 stored", objs: []client.Object{clusterCRD("v1beta2", "v1beta1")}},
		{name: "v1beta1 stored", objs: []client.Object{clusterCRD("v1beta1", "v1beta2")}, wantErr: ErrUnsupported},
		{name: "v1beta1 stored, upgrade allows it", objs: []client.Object{clusterCRD("v1beta1")}, opts: []CheckOption{AllowContract("v1beta1")}},
		{name: "v1alpha4 stored, upgrade refuses it", objs: []client.Object{clusterCRD("v1alpha4")}, opts: []CheckOption{AllowContract("v1beta1")}, wantErr: ErrUnsupported},
		{name: "no storage version", objs: []client.Object{clusterCRD("", "v1beta2")}, wantErr: ErrUnsupported},
		{name: "not installed", wantErr: ErrNotInstalled},
		{name: "not installed, init allows it", opts: []CheckOption{AllowNotInstalled()}},
		{name: "not installed, upgrade refuses it", opts: []CheckOption{AllowContract("v1beta1")}, wantErr: ErrNotInstalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckManagementCluster(ctx, reader(t, tc.objs...), tc.opts...)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
