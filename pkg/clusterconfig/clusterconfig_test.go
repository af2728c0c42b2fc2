package clusterconfig

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var defaults = Settings{ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12", ClusterDomain: "cluster.local"}

func TestResolve(t *testing.T) {
	cluster := Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "example.internal"}
	for _, tc := range []struct {
		name    string
		cluster Settings
		found   bool
		flags   Settings
		want    Settings
		wantErr string
	}{
		{name: "the cluster's settings without flags", cluster: cluster, found: true, want: cluster},
		{name: "flags that agree", cluster: cluster, found: true,
			flags: Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "example.internal."}, want: cluster},
		{name: "a pod range that disagrees", cluster: cluster, found: true, flags: Settings{ClusterCIDR: "10.244.0.0/16"},
			wantErr: "--cluster-cidr 10.244.0.0/16 disagrees with the cluster's 10.42.0.0/16"},
		{name: "a service range that disagrees", cluster: cluster, found: true, flags: Settings{ServiceCIDR: "10.96.0.0/12"},
			wantErr: "--service-cluster-ip-range 10.96.0.0/12 disagrees with the cluster's 10.43.0.0/16"},
		{name: "a domain that disagrees", cluster: cluster, found: true, flags: Settings{ClusterDomain: "cluster.local"},
			wantErr: "--cluster-domain cluster.local disagrees"},
		{name: "no published config: defaults", want: defaults},
		{name: "no published config: flags over defaults", flags: Settings{ClusterCIDR: "10.42.0.0/16"},
			want: Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.96.0.0/12", ClusterDomain: "cluster.local"}},
		{name: "no published config: a bad flag", flags: Settings{ServiceCIDR: "10.96.0.1/12"}, wantErr: "host bits set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.cluster, tc.found, tc.flags, defaults)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPublishRead(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if _, found, err := Read(ctx, client); found || err != nil {
		t.Fatalf("before publishing: found %v, err %v", found, err)
	}
	s := Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "cluster.local"}
	if err := Publish(ctx, client, s); err != nil {
		t.Fatal(err)
	}
	s.ServiceCIDR = "10.44.0.0/16"   // a restart with another range corrects it
	s.Registry = "192.168.1.10:5000" // and the registry comes with it
	if err := Publish(ctx, client, s); err != nil {
		t.Fatal(err)
	}
	got, found, err := Read(ctx, client)
	if err != nil || !found || got != s {
		t.Fatalf("Read = %+v, %v, %v; want %+v", got, found, err, s)
	}
	if err := Publish(ctx, client, Settings{ClusterCIDR: "nonsense", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "x"}); err == nil {
		t.Error("a bad pod range was published")
	}
	if err := Publish(ctx, client, Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "x", Registry: "no-port"}); err == nil {
		t.Error("a registry without a port was published")
	}
	cm, _ := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, Name, metav1.GetOptions{})
	cm.Data[KeyClusterCIDR] = "garbage"
	if _, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(ctx, client); err == nil || !strings.Contains(err.Error(), "cluster-cidr") {
		t.Errorf("a garbled config read as %v", err)
	}
}
