// Command registrar registers a CSI node plugin with kubelet, as node-driver-registrar does: it
// asks the plugin its name (GetPluginInfo), then serves kubelet's plugin-registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1) on <driver>-reg.sock in the registration
// directory, which kubelet watches. kubelet calls GetInfo, learns the plugin's socket path on the
// host (--kubelet-registration-path), talks to the plugin itself and reports the outcome with
// NotifyRegistrationStatus; a refusal ends this program so that kubelet restarts the container
// and registration is tried again.
//
// It takes the flags deploy/kubernetes/hostpath/node.yaml passes to node-driver-registrar.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func main() {
	csiAddress := flag.String("csi-address", "/run/csi/socket", "the CSI plugin's socket, as this container sees it")
	kubeletPath := flag.String("kubelet-registration-path", "", "the CSI plugin's socket as kubelet sees it on the host (required)")
	regDir := flag.String("plugin-registration-path", "/registration", "kubelet's plugin registration directory, as this container sees it")
	httpEndpoint := flag.String("http-endpoint", "", "address of the /healthz endpoint (none when empty)")
	flag.Int("v", 0, "log verbosity (accepted for node-driver-registrar's command line; this program logs little)")
	flag.Parse()
	if *kubeletPath == "" {
		log.Fatal("--kubelet-registration-path is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, *csiAddress, *kubeletPath, *regDir, *httpEndpoint); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, csiAddress, kubeletPath, regDir, httpEndpoint string) error {
	name, err := driverName(ctx, csiAddress)
	if err != nil {
		return err
	}
	log.Printf("CSI driver %s at %s; registering %s with kubelet", name, csiAddress, kubeletPath)
	sock := filepath.Join(regDir, name+"-reg.sock")
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	defer os.Remove(sock)
	refused := make(chan string, 1)
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registration{name: name, endpoint: kubeletPath, refused: refused})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if httpEndpoint != "" {
		go serveHealth(httpEndpoint, sock)
	}
	select {
	case <-ctx.Done():
		srv.Stop()
		return nil
	case why := <-refused:
		srv.Stop()
		return fmt.Errorf("kubelet refused the registration of %s: %s", name, why)
	case err := <-served:
		return fmt.Errorf("registration server: %w", err)
	}
}

// driverName asks the plugin its name, retrying until it answers: the plugin's container may
// start after this one.
func driverName(ctx context.Context, csiAddress string) (string, error) {
	conn, err := grpc.NewClient("unix://"+csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", fmt.Errorf("CSI socket %s: %w", csiAddress, err)
	}
	defer conn.Close()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := csi.NewIdentityClient(conn).GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil && resp.GetName() != "" {
			return resp.GetName(), nil
		}
		log.Printf("waiting for the CSI plugin at %s: GetPluginInfo: %v", csiAddress, err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// registration answers kubelet's plugin watcher.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	refused        chan<- string
}

// GetInfo tells kubelet what the plugin is and where its socket is on the host.
func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus is kubelet's verdict after it has called the plugin's NodeGetInfo.
func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.GetPluginRegistered() {
		log.Printf("kubelet registered %s", r.name)
	} else {
		select {
		case r.refused <- strings.TrimSpace(s.GetError()):
		default:
		}
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// serveHealth answers /healthz with 200 while the registration socket exists: kubelet finds
// the plugin through it, and a removed socket means the plugin is gone for kubelet.
func serveHealth(addr, sock string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(sock); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	log.Printf("/healthz on %s: %v", addr, http.ListenAndServe(addr, mux))
}
