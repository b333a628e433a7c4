// Command livenessprobe serves /healthz for a CSI plugin, as livenessprobe does: each request
// calls the plugin's Probe over its socket and answers 200 only when the plugin says it is
// ready, so kubelet's liveness probe of the plugin's container restarts a plugin that hangs.
//
// It takes the flags deploy/kubernetes passes to livenessprobe.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	csiAddress := flag.String("csi-address", "/run/csi/socket", "the CSI plugin's socket")
	port := flag.Int("health-port", 9808, "TCP port of /healthz, on all addresses")
	timeout := flag.Duration("probe-timeout", time.Second, "how long one Probe call may take")
	flag.Int("v", 0, "log verbosity (accepted for livenessprobe's command line; this program logs little)")
	flag.Parse()
	conn, err := grpc.NewClient("unix://"+*csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("CSI socket %s: %v", *csiAddress, err)
	}
	defer conn.Close()
	mux := http.NewServeMux()
	mux.Handle("/healthz", healthz(csi.NewIdentityClient(conn), *timeout))
	addr := net.JoinHostPort("", strconv.Itoa(*port))
	log.Printf("probing %s; /healthz on %s", *csiAddress, addr)
	log.Fatal(http.ListenAndServe(addr, mux))
}

// healthz answers 200 when the plugin's Probe succeeds within timeout and does not say it is
// not ready (an absent ready field means ready, as the CSI spec says), 500 otherwise.
func healthz(identity csi.IdentityClient, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		resp, err := identity.Probe(ctx, &csi.ProbeRequest{})
		switch {
		case err != nil:
			http.Error(w, "Probe: "+err.Error(), http.StatusInternalServerError)
		case resp.GetReady() != nil && !resp.GetReady().GetValue():
			http.Error(w, "the plugin is not ready", http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
}
