package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/secrets"
)

// grantFlags are the flags of "bucket grant".
type grantFlags struct {
	account, auth, serviceAccount, protocol, mode, credentialsFile string
	bucketModes, params                                            []string
}

func newBucketGrantCmd(a *app) *cobra.Command {
	var f grantFlags
	c := &cobra.Command{
		Use:   "grant BUCKET_ID... --account NAME",
		Short: "Give an account access to buckets (DriverGrantBucketAccess)",
		Long: `Give an account access to buckets (DriverGrantBucketAccess).

--account NAME is the idempotency key: granting again under the same NAME with
the same buckets, modes and parameters answers the same account and the same
credentials. The output shows the account ID, each bucket's info and the NAMES
of the credentials; the credentials themselves are secrets and are written only
to --credentials-file (the whole answer as JSON with proto field names, file
mode 0600), never to the terminal. A repeated grant answers them again, so a
lost file is recovered by granting again.

COSI v1alpha1 grants one bucket, read-write, and names no protocol (the plugin
chooses); --auth service-account is its IAM. In v1alpha2 --protocol defaults to
the first protocol the plugin reports in DriverGetInfo.`,
		Example: `  csictl bucket grant bc-1 --account ba-1 --credentials-file ba-1.json
  csictl bucket grant bc-1 bc-2 --account ba-2 --mode ro --bucket-mode bc-2=rw --protocol s3
  csictl bucket grant bc-1 --account ba-3 --auth service-account --service-account app-sa`,
		Args: func(c *cobra.Command, argv []string) error {
			if len(argv) == 0 {
				return fmt.Errorf("%s takes at least 1 argument (BUCKET_ID...), got 0", c.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, argv []string) error {
			return f.run(a, cmd, argv)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.account, "account", "", "name of the access, the idempotency key of the grant (required)")
	fl.StringVar(&f.auth, "auth", "key", "authentication: key (credentials in the answer) or service-account (v1alpha1: IAM)")
	fl.StringVar(&f.serviceAccount, "service-account", "", "workload service account to give access (--auth service-account; v1alpha2 only)")
	fl.StringVar(&f.protocol, "protocol", "", "protocol of the credentials: s3, azure or gcs (v1alpha2 only; default the plugin's first)")
	fl.StringVar(&f.mode, "mode", "rw", "access mode of every bucket: rw, ro or wo (v1alpha1: rw only)")
	fl.StringArrayVar(&f.bucketModes, "bucket-mode", nil, "access mode of one bucket, BUCKET_ID=rw|ro|wo, over --mode (repeatable)")
	fl.StringArrayVar(&f.params, "param", nil, "bucket access class parameter key=value (repeatable)")
	fl.StringVar(&f.credentialsFile, "credentials-file", "", "write the answer, credentials included, to this file as JSON with mode 0600")
	_ = c.MarkFlagRequired("account")
	_ = c.MarkFlagFilename("credentials-file", "json")
	registerProtocolCompletion(c)
	registerAuthCompletion(c)
	_ = c.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(bucketModeNames, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("bucket-mode", completeBucketModes)
	return c
}

// completeBucketModes offers ID=MODE for the buckets already on the command line: with no list
// RPC in COSI, they are the only bucket IDs csictl knows.
func completeBucketModes(_ *cobra.Command, argv []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, id := range argv {
		for _, m := range bucketModeNames {
			if s := id + "=" + m; strings.HasPrefix(s, prefix) {
				out = append(out, s)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func registerAuthCompletion(c *cobra.Command) {
	_ = c.RegisterFlagCompletionFunc("auth", cobra.FixedCompletions([]string{"key", "service-account"}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *grantFlags) run(a *app, cmd *cobra.Command, buckets []string) error {
	if err := checkBucketIDs("BUCKET_ID", buckets); err != nil {
		return err
	}
	modes, err := parseBucketModes(buckets, f.mode, f.bucketModes)
	if err != nil {
		return err
	}
	auth, err := parseAuth(f.auth)
	if err != nil {
		return err
	}
	if err := checkServiceAccount(auth, f.serviceAccount); err != nil {
		return err
	}
	var protocol *cosi2.ObjectProtocol
	if f.protocol != "" {
		if protocol, err = parseProtocol(f.protocol); err != nil {
			return err
		}
	}
	params, err := parseMap("param", f.params)
	if err != nil {
		return err
	}
	s, err := a.openCOSI(cmd)
	if err != nil {
		return err
	}
	if s.version == cosiV1Alpha1 {
		return f.grantV1(a, cmd, s, buckets, modes, auth, protocol, params)
	}
	if auth.GetType() == cosi2.AuthenticationType_SERVICE_ACCOUNT && f.serviceAccount == "" {
		return s.refuse("--auth service-account needs --service-account NAME")
	}
	if protocol == nil {
		if protocol, err = s.defaultProtocol(a, cmd); err != nil {
			return err
		}
	}
	req := &cosi2.DriverGrantBucketAccessRequest{AccountName: f.account, Protocol: protocol, AuthenticationType: auth,
		ServiceAccountName: f.serviceAccount, Parameters: params}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{
			BucketId: b, AccessMode: &cosi2.AccessMode{Mode: modes[b]}})
	}
	resp, err := invoke(a, cmd, s.conn, cosi2.NewProvisionerClient, cosi2.ProvisionerClient.DriverGrantBucketAccess, req)
	if err != nil {
		return err
	}
	keys := credentialKeysV2(resp.GetCredentials())
	return f.finish(a, resp, func(t *table) {
		for _, b := range resp.GetBuckets() {
			infos := protocolInfos(b.GetBucketInfo())
			if len(infos) == 0 {
				// The plugin sent no info for the protocol; the row still names the bucket.
				infos = []protocolInfo{{protocol: protocol.GetType().String()}}
			}
			for _, p := range infos {
				t.row(resp.GetAccountId(), b.GetBucketId(), p.protocol, p.info, keys[p.protocol])
			}
		}
	})
}

// grantV1 is a grant in v1alpha1, which says less: one bucket, read-write, no protocol and no
// service account. Anything more on the command line is refused rather than dropped.
func (f *grantFlags) grantV1(a *app, cmd *cobra.Command, s *cosiSession, buckets []string,
	modes map[string]cosi2.AccessMode_Mode, auth *cosi2.AuthenticationType, protocol *cosi2.ObjectProtocol, params map[string]string,
) error {
	switch {
	case len(buckets) != 1:
		return s.refuse("a v1alpha1 grant takes one BUCKET_ID, got %d", len(buckets))
	case modes[buckets[0]] != cosi2.AccessMode_READ_WRITE:
		return s.refuse("v1alpha1 has no access modes: every grant is read-write")
	case protocol != nil:
		return s.refuse("--protocol: a v1alpha1 grant names no protocol (the plugin chooses)")
	case f.serviceAccount != "":
		return s.refuse("--service-account: a v1alpha1 grant names no service account")
	}
	at := cosi1.AuthenticationType_Key
	if auth.GetType() == cosi2.AuthenticationType_SERVICE_ACCOUNT {
		at = cosi1.AuthenticationType_IAM
	}
	resp, err := invoke(a, cmd, s.conn, cosi1.NewProvisionerClient, cosi1.ProvisionerClient.DriverGrantBucketAccess,
		&cosi1.DriverGrantBucketAccessRequest{BucketId: buckets[0], Name: f.account, AuthenticationType: at, Parameters: params})
	if err != nil {
		return err
	}
	// v1alpha1 answers no bucket info: the endpoint and region travel inside the credentials.
	keys := credentialKeysV1(resp.GetCredentials())
	return f.finish(a, resp, func(t *table) {
		if len(keys) == 0 {
			t.row(resp.GetAccountId(), buckets[0], "", "", "")
		}
		for _, p := range sortedKeys(keys) {
			t.row(resp.GetAccountId(), buckets[0], p, "", keys[p])
		}
	})
}

// finish saves the answer to --credentials-file, then prints it with every credential value
// replaced, by the secrets package's descriptor-driven redaction (the same that keeps them out of
// the library's logs), so the table and the json and yaml forms show which credentials there are
// and never what they are.
func (f *grantFlags) finish(a *app, resp proto.Message, rows func(*table)) error {
	if f.credentialsFile != "" {
		if err := writeCredentials(f.credentialsFile, resp); err != nil {
			return callError{err}
		}
	} else if len(secrets.Values(resp)) > 0 {
		fmt.Fprintln(a.stderr, "note: credentials not saved; give --credentials-file to keep them (a repeated grant answers them again)")
	}
	return a.print(secrets.Redact(resp), func(t *table) {
		t.row("ACCOUNT", "BUCKET", "PROTOCOL", "INFO", "CREDENTIALS")
		rows(t)
	})
}

func newBucketRevokeCmd(a *app) *cobra.Command {
	var (
		buckets, params                []string
		protocol, auth, serviceAccount string
	)
	c := &cobra.Command{
		Use:   "revoke ACCOUNT_ID --bucket BUCKET_ID...",
		Short: "Take an account's access to buckets away (DriverRevokeBucketAccess)",
		Long: `Take an account's access to buckets away (DriverRevokeBucketAccess); its
credentials stop working. An account that is already gone is not an error.

COSI v1alpha1 revokes one bucket and names no protocol, authentication or
service account. In v1alpha2 --protocol defaults to the plugin's first protocol.`,
		Example:           `  csictl bucket revoke acct-ba-1 --bucket bc-1`,
		Args:              args("ACCOUNT_ID"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkBucketIDs("--bucket", buckets); err != nil {
				return err
			}
			at, err := parseAuth(auth)
			if err != nil {
				return err
			}
			if err := checkServiceAccount(at, serviceAccount); err != nil {
				return err
			}
			var p *cosi2.ObjectProtocol
			if protocol != "" {
				if p, err = parseProtocol(protocol); err != nil {
					return err
				}
			}
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
				switch {
				case len(buckets) != 1:
					return s.refuse("a v1alpha1 revoke takes one --bucket, got %d", len(buckets))
				case p != nil || cmd.Flags().Changed("auth") || serviceAccount != "":
					return s.refuse("--protocol, --auth, --service-account: a v1alpha1 revoke names none of them")
				}
				resp, err = invoke(a, cmd, s.conn, cosi1.NewProvisionerClient, cosi1.ProvisionerClient.DriverRevokeBucketAccess,
					&cosi1.DriverRevokeBucketAccessRequest{AccountId: argv[0], BucketId: buckets[0], RevokeAccessContext: m})
			} else {
				if p == nil {
					if p, err = s.defaultProtocol(a, cmd); err != nil {
						return err
					}
				}
				req := &cosi2.DriverRevokeBucketAccessRequest{AccountId: argv[0], Protocol: p, AuthenticationType: at,
					ServiceAccountName: serviceAccount, Parameters: m}
				for _, b := range buckets {
					req.Buckets = append(req.Buckets, &cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{BucketId: b})
				}
				resp, err = invoke(a, cmd, s.conn, cosi2.NewProvisionerClient, cosi2.ProvisionerClient.DriverRevokeBucketAccess, req)
			}
			if err != nil {
				return err
			}
			return a.done(resp, "access of account %q to %s revoked", argv[0], strings.Join(buckets, ", "))
		},
	}
	f := c.Flags()
	f.StringArrayVar(&buckets, "bucket", nil, "ID of a bucket whose access is revoked (repeatable; v1alpha1: exactly one)")
	f.StringVar(&protocol, "protocol", "", "protocol of the access: s3, azure or gcs (v1alpha2 only; default the plugin's first)")
	f.StringVar(&auth, "auth", "key", "authentication of the access: key or service-account (v1alpha2 only)")
	f.StringVar(&serviceAccount, "service-account", "", "service account of the access (--auth service-account; v1alpha2 only)")
	f.StringArrayVar(&params, "param", nil, "parameter key=value (repeatable; v1alpha1: revoke access context)")
	_ = c.MarkFlagRequired("bucket")
	_ = c.RegisterFlagCompletionFunc("bucket", cobra.NoFileCompletions)
	registerProtocolCompletion(c)
	registerAuthCompletion(c)
	return c
}
