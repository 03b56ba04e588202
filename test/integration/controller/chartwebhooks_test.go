package controller

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/webhooks"
)

// routeWebhookService points the chart's webhook Service at the manager running in the test:
// with --enable-aggregator-routing the apiserver calls webhooks at an endpoint of the Service
// (which would be the pods'), in this test the host's address and the manager's webhook port.
// (Endpoints may not be loopback addresses.)
func routeWebhookService(t *testing.T, c client.Client, port int) {
	t.Helper()
	ip := hostIP(t)
	create(t, c,
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: webhooks.ServiceName},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}},
				Ports: []corev1.EndpointPort{{Name: "webhook", Port: int32(port), Protocol: corev1.ProtocolTCP}}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: webhooks.ServiceName + "-test",
			Labels: map[string]string{discoveryv1.LabelServiceName: webhooks.ServiceName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("webhook"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}}},
	)
}

func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("no non-loopback IPv4 address among %v: the apiserver cannot reach the webhook", addrs)
	return ""
}

// checkWebhooksServeWithBuiltinCerts: the manager created the certificate Secret, injected its
// CA into both webhook configurations, and the apiserver calls the webhooks with it.
func checkWebhooksServeWithBuiltinCerts(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "certificate Secret and CA injection", func() error {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: certs.DefaultSecretName}, &s); err != nil {
			return err
		}
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, &v); err != nil {
			return err
		}
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: webhooks.MutatingConfigurationName}, &m); err != nil {
			return err
		}
		for _, w := range v.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, s.Data[certs.KeyCACert]) {
				return fmt.Errorf("validating webhook %s: caBundle is not the Secret's CA", w.Name)
			}
		}
		for _, w := range m.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, s.Data[certs.KeyCACert]) {
				return fmt.Errorf("mutating webhook %s: caBundle is not the Secret's CA", w.Name)
			}
		}
		return nil
	})
	checkWebhooksAdmit(t, c)
}

// checkWebhooksAdmit: the apiserver calls the webhooks over TLS: the collectors of KubeStellar's
// docs are admitted, and a bad one is rejected naming the field.
func checkWebhooksAdmit(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{{Name: "x", Def: "returned.status.("}}}}
	eventually(t, "the validating webhook rejects a bad StatusCollector", func() error {
		err := c.Create(ctx, bad.DeepCopy())
		if err == nil {
			return fmt.Errorf("admitted %s", bad.Name)
		}
		if !strings.Contains(err.Error(), "spec.select[0].def") {
			return err
		}
		return nil
	})
	for _, o := range kubestellarDocCollectors() {
		eventually(t, "admit "+o.GetName(), func() error {
			err := c.Create(ctx, o)
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
}

func checkLease(t *testing.T, c client.Client) {
	t.Helper()
	eventually(t, "leader Lease", func() error {
		var lease coordinationv1.Lease
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: releaseNS, Name: aggregator.DefaultLeaderElectionID}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
}
