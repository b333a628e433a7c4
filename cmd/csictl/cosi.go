package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// The COSI wire versions csictl speaks, and "auto", which asks the plugin.
const (
	cosiV1Alpha1 = "v1alpha1"
	cosiV1Alpha2 = "v1alpha2"
	cosiAuto     = "auto"
)

var cosiVersions = []string{cosiAuto, cosiV1Alpha1, cosiV1Alpha2}

// registerCOSIVersionFlag adds the global --cosi-version. It is global rather than per command so
// that a script sets it once for a driver, as it sets --endpoint.
func registerCOSIVersionFlag(a *app, root *cobra.Command) {
	root.PersistentFlags().StringVar(&a.cosiVersion, "cosi-version", cosiAuto,
		"COSI wire version of the cosi and bucket commands: v1alpha1, v1alpha2, or auto (v1alpha2 unless the plugin does not serve it)")
	_ = root.RegisterFlagCompletionFunc("cosi-version", cobra.FixedCompletions(cosiVersions, cobra.ShellCompDirectiveNoFileComp))
}

func checkCOSIVersion(v string) error {
	for _, known := range cosiVersions {
		if v == known {
			return nil
		}
	}
	return fmt.Errorf("invalid --cosi-version %q: use %s", v, strings.Join(cosiVersions, ", "))
}

// cosiSession is the connection to a COSI plugin and the wire version spoken on it, chosen once
// per run.
type cosiSession struct {
	conn    *grpc.ClientConn
	version string
	// detected: the version was chosen by --cosi-version auto, not named by the user; errors say
	// so, because the user may not know which version the plugin serves.
	detected bool
	// info is the plugin's v1alpha2 DriverGetInfo answer once it was asked (auto asks it first),
	// so no run asks twice.
	info *cosi2.DriverGetInfoResponse
}

// openCOSI connects to the COSI endpoint and settles the wire version. With auto it asks the
// v1alpha2 Identity service and falls back to v1alpha1 only when that service is UNIMPLEMENTED:
// any other failure (plugin down, timeout) is reported as it is rather than hidden behind a guess.
// A named version makes no call here, so a command refused for that version never reaches the
// plugin.
func (a *app) openCOSI(cmd *cobra.Command) (*cosiSession, error) {
	if a.cosi != nil {
		return a.cosi, nil
	}
	conn, err := a.conn(envCOSIEndpoint)
	if err != nil {
		return nil, err
	}
	s := &cosiSession{conn: conn, version: a.cosiVersion}
	if s.version == cosiAuto {
		info, err := invoke(a, cmd, conn, cosi2.NewIdentityClient, cosi2.IdentityClient.DriverGetInfo, &cosi2.DriverGetInfoRequest{})
		switch {
		case err == nil:
			s.version, s.info = cosiV1Alpha2, info
		case status.Code(err) == codes.Unimplemented:
			s.version = cosiV1Alpha1
		default:
			return nil, err
		}
		s.detected = true
	}
	a.cosi = s
	return s, nil
}

// v2Info returns the plugin's v1alpha2 DriverGetInfo answer, asking for it at most once.
func (s *cosiSession) v2Info(a *app, cmd *cobra.Command) (*cosi2.DriverGetInfoResponse, error) {
	if s.info != nil {
		return s.info, nil
	}
	info, err := invoke(a, cmd, s.conn, cosi2.NewIdentityClient, cosi2.IdentityClient.DriverGetInfo, &cosi2.DriverGetInfoRequest{})
	if err != nil {
		return nil, err
	}
	s.info = info
	return info, nil
}

// defaultProtocol is the protocol of a v1alpha2 grant or revoke given no --protocol: the first
// the plugin supports, which for the common single-protocol driver is the only right answer.
func (s *cosiSession) defaultProtocol(a *app, cmd *cobra.Command) (*cosi2.ObjectProtocol, error) {
	info, err := s.v2Info(a, cmd)
	if err != nil {
		return nil, err
	}
	if len(info.GetSupportedProtocols()) == 0 {
		return nil, callError{errors.New("the plugin names no supported protocol in DriverGetInfo: give --protocol")}
	}
	return info.GetSupportedProtocols()[0], nil
}

// refuse is the usage error for what the session's wire version cannot express. It says where
// the version came from, since under auto the user did not choose it.
func (s *cosiSession) refuse(format string, args ...any) error {
	why := "as --cosi-version says"
	if s.detected {
		why = "the plugin does not serve v1alpha2"
	}
	return fmt.Errorf("%s (COSI %s: %s)", fmt.Sprintf(format, args...), s.version, why)
}

// newCOSICmd builds "csictl cosi": the COSI Identity service. Bucket calls are under "csictl
// bucket", as volumes are not under "csictl controller".
func newCOSICmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "cosi", Short: "COSI identity: bucket driver name and protocols"})
	c.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Show the bucket driver's name and object protocols (DriverGetInfo)",
		Long: `Show the bucket driver's name and object protocols (DriverGetInfo).

The VERSION column is the COSI wire version spoken: with --cosi-version auto it
is the version the plugin was found to serve. COSI v1alpha1 does not report
protocols.`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openCOSI(cmd)
			if err != nil {
				return err
			}
			if s.version == cosiV1Alpha1 {
				resp, err := invoke(a, cmd, s.conn, cosi1.NewIdentityClient, cosi1.IdentityClient.DriverGetInfo, &cosi1.DriverGetInfoRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					t.row("NAME", "VERSION", "PROTOCOLS")
					t.row(resp.GetName(), s.version, "")
				})
			}
			resp, err := s.v2Info(a, cmd)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				var names []string
				for _, p := range resp.GetSupportedProtocols() {
					names = append(names, p.GetType().String())
				}
				t.row("NAME", "VERSION", "PROTOCOLS")
				t.row(resp.GetName(), s.version, strings.Join(names, ","))
			})
		},
	})
	return c
}
