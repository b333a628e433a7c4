package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/csikit/csikit/driver/drivertest/kubesuite"
)

// newKubernetesTestDriverCmd builds "csictl kubernetes-testdriver DIR": the definition file of
// Kubernetes' storage e2e suite for the plugin at --endpoint (and --controller-endpoint, when
// its controller runs apart), from what it advertises.
func newKubernetesTestDriverCmd(a *app) *cobra.Command {
	var (
		o                               kubesuite.Options
		scParams, snapParams, modParams []string
		capabilities, inline            []string
		controllerEndpoint              string
	)
	c := &cobra.Command{
		Use:   "kubernetes-testdriver DIR",
		Short: "Write the Kubernetes storage e2e suite's test-driver definition for the plugin (e2e.test -storage.testdriver)",
		Long: `Asks the plugin what it advertises and writes DIR/testdriver.json, and a file per class
with parameters, for
  e2e.test -storage.testdriver=DIR/testdriver.json -ginkgo.focus='External.Storage'
--endpoint serves the controller and the node together, or, with --controller-endpoint, the
node alone (a node DaemonSet's socket beside a controller StatefulSet's). Flags add what CSI
cannot tell: block volumes, fs types, sizes, class parameters.`,
		Example: `  csictl --endpoint /run/csi/csi.sock kubernetes-testdriver /tmp/e2e --block --fs-type ext4
  csictl --endpoint /var/lib/kubelet/plugins/hostpath.csikit.dev/csi.sock \
    --controller-endpoint /run/hostpath-controller/csi.sock kubernetes-testdriver /tmp/e2e \
    --modify-param iops=3000 --modify-param throughput=125`,
		Args: args("DIR"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var err error
			if o.StorageClassParameters, err = parseMap("storage-class-param", scParams); err != nil {
				return err
			}
			if o.SnapshotClassParameters, err = parseMap("snapshot-class-param", snapParams); err != nil {
				return err
			}
			if o.ModifyParameters, err = parseMap("modify-param", modParams); err != nil {
				return err
			}
			caps, err := parseMap("capability", capabilities)
			if err != nil {
				return err
			}
			for k, v := range caps {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("--capability %s=%s: want true or false", k, v)
				}
				if o.Capabilities == nil {
					o.Capabilities = map[string]bool{}
				}
				o.Capabilities[k] = b
			}
			for _, iv := range inline {
				attrs, err := parseMap("inline-volume", strings.Split(iv, ","))
				if iv == "" {
					attrs, err = nil, nil
				}
				if err != nil {
					return err
				}
				o.InlineVolumes = append(o.InlineVolumes, kubesuite.InlineVolume{Attributes: attrs})
			}
			if err := o.Validate(); err != nil {
				return err
			}
			conn, err := a.conn(envEndpoint)
			if err != nil {
				return err
			}
			ctx, cancel := a.callContext(cmd)
			defer cancel()
			var def *kubesuite.Definition
			if controllerEndpoint == "" {
				def, err = kubesuite.Describe(ctx, conn, o)
			} else {
				ctrl, dialErr := dial(controllerEndpoint, "--controller-endpoint")
				if dialErr != nil {
					return dialErr
				}
				defer ctrl.Close()
				def, err = kubesuite.DescribeSplit(ctx, ctrl, conn, o)
			}
			if err != nil {
				return callError{err}
			}
			path, err := def.WriteFiles(argv[0])
			if err != nil {
				return callError{err}
			}
			return a.print(&emptypb.Empty{}, func(t *table) {
				t.row("CAPABILITY", "ON")
				for _, k := range slices.Sorted(maps.Keys(def.DriverInfo.Capabilities)) {
					t.row(k, strconv.FormatBool(def.DriverInfo.Capabilities[k]))
				}
				fmt.Fprintf(t.tw, "\nwrote %s; run:\n  e2e.test -storage.testdriver=%s -ginkgo.focus='External.Storage'\n", path, path)
				if o.MaxFileSize == "" {
					// The one spec that passes hollow rather than being skipped: say so where the
					// author looks, not only in the flag's help.
					fmt.Fprintf(t.tw, "note: %s\n", noFileSizeNote)
				}
			})
		},
	}
	f := c.Flags()
	f.StringVar(&controllerEndpoint, "controller-endpoint", "",
		"the controller service's endpoint when it runs apart from the node's; --endpoint is then the node's")
	f.BoolVar(&o.ImmediateBinding, "immediate-binding", false,
		"keep the suite's StorageClass at Immediate binding (default for a plugin with topology or capacity: WaitForFirstConsumer)")
	f.BoolVar(&o.Block, "block", false, "the plugin serves raw block volumes (volumeMode: Block)")
	f.StringArrayVar(&o.FSTypes, "fs-type", nil, `fs type a StorageClass may name (repeatable; "" is the default; none: "" only)`)
	f.StringVar(&o.MinSize, "min-size", "", "smallest size the suite asks for, a size the plugin provisions exactly (default 1Mi)")
	f.StringVar(&o.MaxSize, "max-size", "", "largest size the suite asks for (default the suite's own)")
	f.StringVar(&o.MaxFileSize, "max-file-size", "",
		"largest file the volumeIO test writes, of 1Mi, 100Mi, 1Gi (default none: that test writes no file)")
	f.IntVar(&o.Stress.Pods, "stress-pods", 0, "pods (volumes) of each [Slow] stress test; 0 leaves them skipped")
	f.IntVar(&o.Stress.Restarts, "stress-restarts", 0, "restarts of each pod in volume-stress (needed with --stress-pods)")
	f.IntVar(&o.Stress.Snapshots, "stress-snapshots", 0, "snapshots per volume in the snapshot stress tests (needed with --stress-pods for a plugin that snapshots)")
	f.StringArrayVar(&scParams, "storage-class-param", nil, "StorageClass parameter key=value (repeatable)")
	f.StringArrayVar(&snapParams, "snapshot-class-param", nil, "VolumeSnapshotClass parameter key=value (repeatable)")
	f.StringArrayVar(&modParams, "modify-param", nil, "VolumeAttributesClass parameter key=value that CreateVolume and ControllerModifyVolume accept; enables the volume-modify tests (repeatable)")
	f.BoolVar(&o.FSGroup, "fs-group", false, "a pod's fsGroup can own the volume's files")
	f.BoolVar(&o.NoExec, "no-exec", false, "files in the volume cannot be executed")
	f.BoolVar(&o.MultiNode, "multi-node", false, "ReadWriteMany volumes, usable from several nodes at once")
	f.BoolVar(&o.ReadOnlyMany, "read-only-many", false, "ReadOnlyMany volumes")
	f.BoolVar(&o.SingleNodeVolumes, "single-node", false, "a volume lives on one node and is usable only there")
	f.BoolVar(&o.FSResizeFromSourceNotSupported, "fs-resize-from-source-not-supported", false,
		"a volume restored or cloned into a larger size keeps its source's file-system size")
	f.StringArrayVar(&inline, "inline-volume", nil, "volume_context of a CSI ephemeral inline volume, key=value,key=value (repeatable)")
	f.StringArrayVar(&capabilities, "capability", nil, "set a suite capability by its name, name=true|false, after the plugin's answers (repeatable)")
	return c
}

// noFileSizeNote is printed when a definition leaves volumeIO's file size unset: the suite
// then runs "should write files of various sizes" with no size at all, and it passes having
// written nothing.
const noFileSizeNote = "no --max-file-size: volumeIO's \"should write files of various sizes\" " +
	"will pass without writing a file; give the largest of 1Mi, 100Mi, 1Gi your smallest volume holds " +
	"(with --min-size if need be)"
