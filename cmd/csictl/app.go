package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/driver/endpoint"
)

// Exit codes. 2 for bad command lines follows the shell convention (and flag.ExitOnError), so a
// script can tell "I called it wrong" from "the plugin said no".
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// Environment variables csictl reads.
const (
	envEndpoint     = "CSI_ENDPOINT"
	envCOSIEndpoint = "COSI_ENDPOINT"
	envSecretsFile  = "CSI_SECRETS_FILE"
)

// app holds what every command shares: the global flags, the writers and one lazily opened
// connection per endpoint variable (CSI_ENDPOINT, COSI_ENDPOINT).
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	endpoint    string
	output      string
	timeout     time.Duration
	secretsFile string
	cosiVersion string

	conns map[string]*grpc.ClientConn
	// cosi is the COSI wire version chosen for this run, once chosen (see cosi.go).
	cosi *cosiSession
}

// callError marks a failure that happened after the command line was accepted: the plugin
// answered with an error, could not be reached, or a file named on the command line could not
// be read. Everything else that reaches run is a usage error. Marking this side, not the usage
// side, means every error cobra itself produces (unknown flags, missing required flags,
// mutually exclusive flags) is a usage error without having to recognise its text.
type callError struct{ err error }

func (e callError) Error() string { return e.err.Error() }
func (e callError) Unwrap() error { return e.err }

// run builds the command tree, executes args and returns the exit code. It never calls
// os.Exit, so tests drive it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, conns: map[string]*grpc.ClientConn{}}
	defer a.close()
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ce callError
	if errors.As(err, &ce) {
		fmt.Fprintf(stderr, "Error: %s\n", describe(ce.err))
		return exitFail
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	if cmd == nil {
		cmd = root
	}
	fmt.Fprint(stderr, cmd.UsageString())
	return exitUsage
}

// describe renders an error for the user: a gRPC status as "CODE: message" with the code named
// as in the spec's error tables (NOT_FOUND, not NotFound), anything else as is.
func describe(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	name, known := code.Code_name[int32(st.Code())]
	if !known {
		name = st.Code().String()
	}
	return name + ": " + st.Message()
}

func (a *app) close() {
	for _, c := range a.conns {
		_ = c.Close()
	}
}

// newRootCmd builds the whole command tree around a.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "csictl",
		Short: "Call the RPCs of a CSI or COSI plugin",
		Long: `csictl calls the RPCs of a CSI plugin (CSI v1.13) or of a COSI bucket driver
(v1alpha1 and v1alpha2) over its socket.

The plugin is found with --endpoint or CSI_ENDPOINT (unix:///abs/path.sock or an
absolute path); the cosi and bucket commands use --endpoint or COSI_ENDPOINT.
Secrets are read only from --secrets-file or CSI_SECRETS_FILE (a YAML or JSON
map) and are never printed; bucket credentials go only to --credentials-file.`,
		Example: `  export CSI_ENDPOINT=unix:///run/csi/csi.sock
  csictl identity info
  csictl volume create pvc-1 --cap mount,ext4,single-node-writer --size 1Gi
  csictl volume list -o yaml
  export COSI_ENDPOINT=unix:///var/lib/cosi/cosi.sock
  csictl bucket create bc-1 --protocol s3`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			switch a.output {
			case outputTable, outputJSON, outputYAML:
			default:
				return fmt.Errorf("invalid --output %q: use table, json or yaml", a.output)
			}
			return checkCOSIVersion(a.cosiVersion)
		},
	}
	asGroup(root)
	// cobra reports a bad flag value or unknown flag as a plain error; keep it plain (usage)
	// but say which command it was for, since the usage that follows is that command's.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	})

	pf := root.PersistentFlags()
	pf.StringVar(&a.endpoint, "endpoint", "", "plugin endpoint, unix:///abs/path.sock or /abs/path.sock (default $"+envEndpoint+
		", or $"+envCOSIEndpoint+" for the cosi and bucket commands)")
	pf.StringVarP(&a.output, "output", "o", outputTable, "output format: table, json or yaml")
	pf.DurationVar(&a.timeout, "timeout", time.Minute, "deadline of each call (0 for none)")
	pf.StringVar(&a.secretsFile, "secrets-file", "", "YAML or JSON map of secrets sent with calls that take secrets (default $"+envSecretsFile+")")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON, outputYAML}, cobra.ShellCompDirectiveNoFileComp))
	registerCOSIVersionFlag(a, root)

	root.AddCommand(
		newIdentityCmd(a),
		newControllerCmd(a),
		newVolumeCmd(a),
		newSnapshotCmd(a),
		newGroupControllerCmd(a),
		newGroupSnapshotCmd(a),
		newVolumeGroupCmd(a),
		newNodeCmd(a),
		newMetadataCmd(a),
		newCOSICmd(a),
		newBucketCmd(a),
		newKubernetesTestDriverCmd(a),
	)
	return root
}

// asGroup makes c a command that only holds subcommands. cobra would print help and succeed
// for "csictl volume" or "csictl volume bogus"; a typo must fail with a usage error instead,
// so that a script notices.
func asGroup(c *cobra.Command) *cobra.Command {
	c.Args = cobra.ArbitraryArgs
	// SuggestionsFor uses this distance as is; cobra only defaults it to 2 on its own path.
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%s: missing subcommand", c.CommandPath())
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return errors.New(msg)
	}
	return c
}

// args returns a positional-argument check naming what is expected, e.g. "VOLUME_ID", so the
// error says more than cobra's "accepts 1 arg(s), received 0".
func args(names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, got []string) error {
		if len(got) == len(names) {
			return nil
		}
		return fmt.Errorf("%s takes %d argument(s) (%s), got %d", c.CommandPath(), len(names), strings.Join(names, " "), len(got))
	}
}

// conn returns the connection to the endpoint named by --endpoint or envVar, opened on first
// use. Endpoint problems are usage errors: they are fixed on the command line.
func (a *app) conn(envVar string) (*grpc.ClientConn, error) {
	if c, ok := a.conns[envVar]; ok {
		return c, nil
	}
	raw, from := a.endpoint, "--endpoint"
	if raw == "" {
		raw, from = a.getenv(envVar), envVar
	}
	if raw == "" {
		example := "unix:///run/csi/csi.sock"
		if envVar == envCOSIEndpoint {
			example = "unix:///var/lib/cosi/cosi.sock" // where the COSI sidecar looks by default
		}
		return nil, fmt.Errorf("no endpoint: set --endpoint or %s to the plugin socket, e.g. %s", envVar, example)
	}
	c, err := dial(raw, from)
	if err != nil {
		return nil, err
	}
	a.conns[envVar] = c
	return c, nil
}

// dial makes a client of the endpoint raw, which the flag or variable from gave.
func dial(raw, from string) (*grpc.ClientConn, error) {
	// TCP is a debugging extension a plugin must opt into; a client may dial it when told to.
	ep, err := endpoint.Parse(raw, endpoint.ParseOptions{AllowTCP: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	target := ep.String()
	if ep.Network == endpoint.NetworkTCP {
		// passthrough: the address is dialled as written, without a DNS resolver in between.
		target = "passthrough:///" + ep.Address
	}
	c, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", from, raw, err)
	}
	return c, nil
}

// callContext bounds one call by --timeout.
func (a *app) callContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if a.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, a.timeout)
}

// prepare connects and fills the request's secrets, if the message has a secrets field.
func prepare(a *app, req proto.Message) (*grpc.ClientConn, error) {
	conn, err := a.conn(envEndpoint)
	if err != nil {
		return nil, err
	}
	if err := a.fillSecrets(req); err != nil {
		return nil, callError{err}
	}
	return conn, nil
}

// unary performs one unary RPC: connect, attach secrets, call under --timeout. The method is a
// method expression such as csi.ControllerClient.DeleteVolume, so each command names its RPC
// once and the plumbing lives here.
func unary[C any, Req proto.Message, Resp any](
	a *app, cmd *cobra.Command,
	newClient func(grpc.ClientConnInterface) C,
	method func(C, context.Context, Req, ...grpc.CallOption) (Resp, error),
	req Req,
) (Resp, error) {
	conn, err := prepare(a, req)
	if err != nil {
		var zero Resp
		return zero, err
	}
	return invoke(a, cmd, conn, newClient, method, req)
}

// invoke calls method on conn under --timeout; a failure is a callError.
func invoke[C any, Req proto.Message, Resp any](
	a *app, cmd *cobra.Command, conn grpc.ClientConnInterface,
	newClient func(grpc.ClientConnInterface) C,
	method func(C, context.Context, Req, ...grpc.CallOption) (Resp, error),
	req Req,
) (Resp, error) {
	var zero Resp
	ctx, cancel := a.callContext(cmd)
	defer cancel()
	resp, err := method(newClient(conn), ctx, req)
	if err != nil {
		return zero, callError{err}
	}
	return resp, nil
}

// fillSecrets sets the map field named "secrets" of req, found by reflection so that every
// request type that takes secrets gets them, today's and future ones alike, without a list to
// keep in step with the spec.
func (a *app) fillSecrets(req proto.Message) error {
	m := req.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("secrets")
	if fd == nil || !fd.IsMap() || fd.MapValue().Kind() != protoreflect.StringKind {
		return nil
	}
	secrets, err := a.loadSecrets()
	if err != nil || len(secrets) == 0 {
		return err
	}
	mv := m.Mutable(fd).Map()
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		mv.Set(protoreflect.ValueOfString(k).MapKey(), protoreflect.ValueOfString(secrets[k]))
	}
	return nil
}

// loadSecrets reads --secrets-file or CSI_SECRETS_FILE; neither set means no secrets.
func (a *app) loadSecrets() (map[string]string, error) {
	path := a.secretsFile
	if path == "" {
		path = a.getenv(envSecretsFile)
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secrets file: %w", err)
	}
	m, err := parseSecrets(b)
	if err != nil {
		return nil, fmt.Errorf("secrets file %s: %w", path, err)
	}
	return m, nil
}
