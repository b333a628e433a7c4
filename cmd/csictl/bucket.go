package main

import (
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// newBucketCmd builds "csictl bucket": the COSI Provisioner service, in the wire version chosen by
// --cosi-version, on the socket named by --endpoint or COSI_ENDPOINT.
//
// Completion of bucket and account IDs offers nothing: COSI has no RPC that lists buckets or
// accounts, so there is nothing to ask the plugin.
func newBucketCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{
		Use:     "bucket",
		Aliases: []string{"buckets"},
		Short:   "Create, get, delete buckets and grant or revoke access to them (COSI)",
		Long: `Create, get, delete buckets and grant or revoke access to them (COSI).

The plugin is found with --endpoint or COSI_ENDPOINT, never CSI_ENDPOINT. The
wire version is --cosi-version: v1alpha1 (the released COSI sidecar), v1alpha2,
or auto, which uses v1alpha2 unless the plugin does not serve it. What a version
cannot express (get in v1alpha1, several buckets in one v1alpha1 grant) is a
usage error.`,
	})
	c.AddCommand(
		newBucketCreateCmd(a),
		newBucketDeleteCmd(a),
		newBucketGetCmd(a),
		newBucketGrantCmd(a),
		newBucketRevokeCmd(a),
	)
	return c
}

// printBucket draws a created or found bucket, one row per protocol it reports.
func (a *app) printBucket(resp proto.Message, id string, info proto.Message) error {
	return a.print(resp, func(t *table) {
		t.row("BUCKET", "PROTOCOL", "INFO")
		infos := protocolInfos(info)
		if len(infos) == 0 {
			t.row(id, "", "")
		}
		for _, p := range infos {
			t.row(id, p.protocol, p.info)
		}
	})
}

func newBucketCreateCmd(a *app) *cobra.Command {
	var protocols, params []string
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a bucket, or find the one created under NAME before (DriverCreateBucket)",
		Long: `Create a bucket, or find the one created under NAME before (DriverCreateBucket).

NAME is the idempotency key: creating again under the same NAME with the same
parameters answers the same bucket. --protocol names the protocols the bucket
must be reachable with (v1alpha2 only; v1alpha1 cannot ask, the plugin chooses).`,
		Example: `  csictl bucket create bc-1 --protocol s3 --param tier=fast
  csictl bucket create bc-1 -o json`,
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ps, err := parseProtocols(protocols)
			if err != nil {
				return err
			}
			m, err := parseMap("param", params)
			if err != nil {
				return err
			}
			s, err := a.openCOSI(cmd)
			if err != nil {
				return err
			}
			if s.version == cosiV1Alpha1 {
				if len(ps) > 0 {
					return s.refuse("--protocol: a v1alpha1 DriverCreateBucket names no protocol")
				}
				resp, err := invoke(a, cmd, s.conn, cosi1.NewProvisionerClient, cosi1.ProvisionerClient.DriverCreateBucket,
					&cosi1.DriverCreateBucketRequest{Name: argv[0], Parameters: m})
				if err != nil {
					return err
				}
				return a.printBucket(resp, resp.GetBucketId(), resp.GetBucketInfo())
			}
			resp, err := invoke(a, cmd, s.conn, cosi2.NewProvisionerClient, cosi2.ProvisionerClient.DriverCreateBucket,
				&cosi2.DriverCreateBucketRequest{Name: argv[0], Protocols: ps, Parameters: m})
			if err != nil {
				return err
			}
			return a.printBucket(resp, resp.GetBucketId(), resp.GetProtocols())
		},
	}
	f := c.Flags()
	f.StringArrayVar(&protocols, "protocol", nil, "object protocol the bucket must serve: s3, azure or gcs (repeatable; v1alpha2 only)")
	f.StringArrayVar(&params, "param", nil, "bucket class parameter key=value (repeatable)")
	registerProtocolCompletion(c)
	return c
}

func newBucketDeleteCmd(a *app) *cobra.Command {
	var params []string
	c := &cobra.Command{
		Use:   "delete BUCKET_ID",
		Short: "Delete a bucket (DriverDeleteBucket)",
		Long: `Delete a bucket (DriverDeleteBucket). A bucket that is already gone is not an
error. --param is sent as the parameters (v1alpha1: delete_context).`,
		Args:              args("BUCKET_ID"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, argv []string) error {
			m, err := parseMap("param", params)
			if err != nil {
				return err
			}
			s, err := a.openCOSI(cmd)
			if err != nil {
				return err
			}
			var resp proto.Message
			if s.version == cosiV1Alpha1 {
				resp, err = invoke(a, cmd, s.conn, cosi1.NewProvisionerClient, cosi1.ProvisionerClient.DriverDeleteBucket,
					&cosi1.DriverDeleteBucketRequest{BucketId: argv[0], DeleteContext: m})
			} else {
				resp, err = invoke(a, cmd, s.conn, cosi2.NewProvisionerClient, cosi2.ProvisionerClient.DriverDeleteBucket,
					&cosi2.DriverDeleteBucketRequest{BucketId: argv[0], Parameters: m})
			}
			if err != nil {
				return err
			}
			return a.done(resp, "bucket %q deleted", argv[0])
		},
	}
	c.Flags().StringArrayVar(&params, "param", nil, "parameter key=value (repeatable; v1alpha1: delete context)")
	return c
}

func newBucketGetCmd(a *app) *cobra.Command {
	var protocols, params []string
	c := &cobra.Command{
		Use:   "get BUCKET_ID",
		Short: "Show a bucket that exists already, for static provisioning (DriverGetExistingBucket; v1alpha2)",
		Long: `Show a bucket that exists already, for static provisioning
(DriverGetExistingBucket). COSI v1alpha1 has no such call, so under v1alpha1
this is a usage error.`,
		Args:              args("BUCKET_ID"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, argv []string) error {
			ps, err := parseProtocols(protocols)
			if err != nil {
				return err
			}
			m, err := parseMap("param", params)
			if err != nil {
				return err
			}
			s, err := a.openCOSI(cmd)
			if err != nil {
				return err
			}
			if s.version == cosiV1Alpha1 {
				return s.refuse("%s needs COSI v1alpha2: v1alpha1 has no DriverGetExistingBucket", cmd.CommandPath())
			}
			resp, err := invoke(a, cmd, s.conn, cosi2.NewProvisionerClient, cosi2.ProvisionerClient.DriverGetExistingBucket,
				&cosi2.DriverGetExistingBucketRequest{ExistingBucketId: argv[0], Protocols: ps, Parameters: m})
			if err != nil {
				return err
			}
			return a.printBucket(resp, resp.GetBucketId(), resp.GetProtocols())
		},
	}
	f := c.Flags()
	f.StringArrayVar(&protocols, "protocol", nil, "object protocol the bucket must serve: s3, azure or gcs (repeatable)")
	f.StringArrayVar(&params, "param", nil, "bucket class parameter key=value (repeatable)")
	registerProtocolCompletion(c)
	return c
}

// registerProtocolCompletion offers the --protocol values of the command c.
func registerProtocolCompletion(c *cobra.Command) {
	_ = c.RegisterFlagCompletionFunc("protocol", cobra.FixedCompletions([]string{"s3", "azure", "gcs"}, cobra.ShellCompDirectiveNoFileComp))
}
