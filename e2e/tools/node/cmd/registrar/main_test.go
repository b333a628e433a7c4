package main

import (
	"context"
	"slices"
	"testing"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestGetInfo(t *testing.T) {
	r := &registration{name: "hostpath.csikit.dev", endpoint: "/var/lib/kubelet/plugins/hostpath.csikit.dev/csi.sock"}
	info, err := r.GetInfo(context.Background(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != r.name || info.Endpoint != r.endpoint || !slices.Equal(info.SupportedVersions, []string{"1.0.0"}) {
		t.Errorf("GetInfo = %+v", info)
	}
}

// TestNotifyRegistrationStatus: a refusal reaches run (which ends the program, so that kubelet
// restarts the container), an acceptance does not.
func TestNotifyRegistrationStatus(t *testing.T) {
	refused := make(chan string, 1)
	r := &registration{name: "d", refused: refused}
	if _, err := r.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case why := <-refused:
		t.Fatalf("an accepted registration was reported refused: %q", why)
	default:
	}
	if _, err := r.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{Error: " no NodeGetInfo \n"}); err != nil {
		t.Fatal(err)
	}
	select {
	case why := <-refused:
		if why != "no NodeGetInfo" {
			t.Errorf("refusal %q", why)
		}
	default:
		t.Fatal("a refused registration was not reported")
	}
}
