package main

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newIdentityCmd builds "csictl identity": the Identity service, which every plugin serves.
func newIdentityCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "identity", Short: "Identity service: plugin name, capabilities, readiness"})
	c.AddCommand(
		&cobra.Command{
			Use:   "info",
			Short: "Show the plugin name, version and manifest (GetPluginInfo)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewIdentityClient, csi.IdentityClient.GetPluginInfo, &csi.GetPluginInfoRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					t.row("NAME", "VERSION", "MANIFEST")
					t.row(resp.GetName(), resp.GetVendorVersion(), kv(resp.GetManifest()))
				})
			},
		},
		&cobra.Command{
			Use:   "capabilities",
			Short: "List the plugin's capabilities (GetPluginCapabilities)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewIdentityClient, csi.IdentityClient.GetPluginCapabilities, &csi.GetPluginCapabilitiesRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					t.row("KIND", "CAPABILITY")
					for _, c := range resp.GetCapabilities() {
						switch {
						case c.GetService() != nil:
							t.row("service", c.GetService().GetType().String())
						case c.GetVolumeExpansion() != nil:
							t.row("volume_expansion", c.GetVolumeExpansion().GetType().String())
						default:
							// A capability newer than these bindings: show it rather than drop it.
							t.row("unknown", c.String())
						}
					}
				})
			},
		},
		&cobra.Command{
			Use:   "probe",
			Short: "Ask whether the plugin is ready (Probe)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewIdentityClient, csi.IdentityClient.Probe, &csi.ProbeRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					// An unset ready field means ready (the spec lets a plugin leave it out),
					// but the table says it was not reported rather than pretend.
					ready := "true (not reported)"
					if r := resp.GetReady(); r != nil {
						ready = yesNo(r.GetValue())
					}
					t.row("READY")
					t.row(ready)
				})
			},
		},
	)
	return c
}
