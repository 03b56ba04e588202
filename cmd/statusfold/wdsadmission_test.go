package main

import (
	"net"
	"slices"
	"testing"
)

// TestWebhookBaseURL: the URL the WDS calls the webhooks at, and the names the built-in serving
// certificate is made valid for.
func TestWebhookBaseURL(t *testing.T) {
	svcNames := []string{"sf-webhook", "sf-webhook.ns", "sf-webhook.ns.svc", "sf-webhook.ns.svc.cluster.local"}
	tests := []struct {
		name, flag, namespace string
		want                  string
		wantErr               bool
		wantDNS               []string
		wantIP                net.IP
	}{
		{name: "default: the Service's cluster DNS name", namespace: "ns", want: "https://sf-webhook.ns.svc:443", wantDNS: svcNames},
		{name: "no namespace, no URL", wantErr: true},
		{name: "an IP", flag: "https://127.0.0.1:9443/", namespace: "ns", want: "https://127.0.0.1:9443", wantDNS: svcNames, wantIP: net.IPv4(127, 0, 0, 1)},
		{name: "another name", flag: "https://webhooks.example.com/sf", namespace: "ns", want: "https://webhooks.example.com/sf",
			wantDNS: append(slices.Clone(svcNames), "webhooks.example.com")},
		{name: "http", flag: "http://x", namespace: "ns", wantErr: true},
		{name: "a query", flag: "https://x/?a=b", namespace: "ns", wantErr: true},
		{name: "no host", flag: "https:///p", namespace: "ns", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &managerOptions{webhookURL: tt.flag, namespace: tt.namespace, webhookSvc: "sf-webhook"}
			u, err := o.webhookBaseURL()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("URL %s, want an error", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tt.want {
				t.Errorf("URL %s, want %s", u, tt.want)
			}
			c := o.builtinCerts(u.Hostname())
			if !slices.Equal(c.DNSNames, tt.wantDNS) {
				t.Errorf("DNS names %v, want %v", c.DNSNames, tt.wantDNS)
			}
			if (tt.wantIP == nil) != (len(c.IPAddresses) == 0) || (tt.wantIP != nil && !c.IPAddresses[0].Equal(tt.wantIP)) {
				t.Errorf("IP addresses %v, want %v", c.IPAddresses, tt.wantIP)
			}
		})
	}
}
