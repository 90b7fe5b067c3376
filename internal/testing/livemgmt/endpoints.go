package livemgmt

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EndpointSliceManager marks the EndpointSlices the harness writes, so kube-controller-manager's
// EndpointSlice controller leaves them alone.
const EndpointSliceManager = "livemgmt.capctl.io"

// syncEndpoints publishes, for every Service that selects pods the stand-in runs, an
// EndpointSlice with the host's address and the ports the processes really listen on. It does
// what the EndpointSlice controller does from pod IPs; the pods have none here (they share the
// host's network, and their container ports are remapped to free host ports). With
// --enable-aggregator-routing the API server sends webhook and conversion calls for the Service
// to these endpoints, so no webhook configuration needs rewriting.
func (k *kubelet) syncEndpoints(ctx context.Context) error {
	cl := k.c.Client
	all := &corev1.PodList{}
	if err := k.r.List(ctx, all); err != nil {
		return err
	}
	var pods []corev1.Pod
	for _, p := range all.Items {
		if p.Spec.NodeName == NodeName {
			pods = append(pods, p)
		}
	}
	svcs := &corev1.ServiceList{}
	if err := k.r.List(ctx, svcs); err != nil {
		return err
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		selected := k.podsFor(svc.Namespace, svc.Spec.Selector, pods)
		if len(selected) == 0 {
			continue
		}
		want := k.slice(svc, selected)
		got := &discoveryv1.EndpointSlice{}
		err := k.r.Get(ctx, client.ObjectKeyFromObject(want), got)
		switch {
		case apierrors.IsNotFound(err):
			if err := cl.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case err != nil:
			return err
		case !reflect.DeepEqual(got.Endpoints, want.Endpoints) || !reflect.DeepEqual(got.Ports, want.Ports):
			got.Endpoints, got.Ports = want.Endpoints, want.Ports
			if err := cl.Update(ctx, got); err != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

func (k *kubelet) slice(svc *corev1.Service, pods []*corev1.Pod) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, Name: svc.Name + "-livemgmt",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: EndpointSliceManager},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{},
	}
	var hostPorts map[string]int
	for _, p := range pods {
		running, ready, _, _, _, ports := k.state(k.pods[p.UID])
		if !running || !ready {
			continue
		}
		hostPorts = ports
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{k.c.podIP()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	if len(es.Endpoints) == 0 {
		return es
	}
	for _, sp := range svc.Spec.Ports {
		name := containerPortName(pods[0], sp.TargetPort)
		if hp, ok := hostPorts[name]; ok {
			es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: ptr.To(sp.Name), Port: ptr.To(int32(hp)), Protocol: ptr.To(corev1.ProtocolTCP)})
		}
	}
	return es
}

// containerPortName resolves a Service's targetPort to the name of the pod's container port.
func containerPortName(p *corev1.Pod, target intstr.IntOrString) string {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if (target.Type == intstr.String && cp.Name == target.StrVal) || (target.Type == intstr.Int && cp.ContainerPort == target.IntVal) {
				return cp.Name
			}
		}
	}
	return ""
}
