// Command csictl is a command-line client for CSI plugins (CSI v1.13): it calls every RPC of the
// Identity, Controller, Node, GroupController and SnapshotMetadata services, of the
// volume-group service of github.com/IBM/csi-volume-group, and of COSI bucket drivers (wire
// versions v1alpha1 and v1alpha2), over a plugin's socket, the way kubectl talks to an API
// server.
//
// The plugin is found with --endpoint or the CSI_ENDPOINT environment variable
// (unix:///abs/path.sock or a bare absolute path); the cosi and bucket commands use --endpoint
// or COSI_ENDPOINT, and --cosi-version (v1alpha1, v1alpha2, or auto: v1alpha2 unless the plugin
// answers UNIMPLEMENTED). Commands are grouped by what they act on:
//
//	csictl identity info|capabilities|probe
//	csictl controller capabilities|capacity
//	csictl volume create|delete|list|get|expand|modify|validate|publish|unpublish|health|stats
//	csictl snapshot create|delete|get|list
//	csictl group-controller capabilities
//	csictl group-snapshot create|delete|get
//	csictl volume-group create|delete|modify|get|list
//	csictl node capabilities|info|stage|unstage|publish|unpublish|expand|health|storage-health
//	csictl metadata allocated|delta
//	csictl cosi info
//	csictl bucket create|delete|get|grant|revoke
//
// Output is a table by default; -o json and -o yaml print the responses as protojson with the
// proto field names. Secrets are read only from --secrets-file or CSI_SECRETS_FILE, never from
// flags, and nothing csictl prints contains them. Likewise the credentials a bucket grant answers
// are written only to the 0600 file named by --credentials-file; the output names them only.
//
// Exit status: 0 on success, 1 when the call fails (the gRPC code and message are printed as
// "Error: CODE: message"), 2 when the command line itself is wrong.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Ctrl-C cancels the call in flight instead of killing the process mid-write, so the
	// plugin sees a cancelled RPC and the user gets the CANCELLED status.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
