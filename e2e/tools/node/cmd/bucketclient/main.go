// Command bucketclient is the application of the e2e bucket pods: it reads the BucketInfo a COSI
// v1alpha1 sidecar (objectstorage-sidecar v0.2.2) writes into a BucketAccess's Secret, mounted
// into the pod as a file, and uses the keys in it against the S3 endpoint it names, as an
// application of a COSI user would.
//
//	bucketclient [flags] put KEY VALUE   store VALUE as object KEY of the bucket
//	bucketclient [flags] get KEY         print object KEY
//
// -bucket names another bucket than the BucketInfo's, -wrong-secret alters the secret half of the
// key before use; with -expect-refused the request must be refused (HTTP 401 or 403): bucketclient
// then prints "refused: HTTP <status>" and exits 0, and exits 1 if the request was served. The
// secret half of the key is never printed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	info := flag.String("info", "/cosi/BucketInfo", "the BucketInfo file (the Secret's BucketInfo key, mounted)")
	var o options
	flag.StringVar(&o.bucket, "bucket", "", "use this bucket rather than the BucketInfo's")
	flag.BoolVar(&o.wrongSecret, "wrong-secret", false, "alter the secret half of the key before use")
	flag.BoolVar(&o.expectRefused, "expect-refused", false, "succeed only if the server refuses the request (HTTP 401 or 403)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := run(ctx, *info, o, flag.Args(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bucketclient:", err)
	}
	os.Exit(code)
}

const usage = "usage: bucketclient [-info FILE] [-bucket NAME] [-wrong-secret] [-expect-refused] put KEY VALUE | get KEY"

// options change what run does with the BucketInfo.
type options struct {
	bucket                     string
	wrongSecret, expectRefused bool
}

// run does one command and returns the exit status.
func run(ctx context.Context, infoPath string, o options, args []string, out io.Writer) (int, error) {
	raw, err := os.ReadFile(infoPath)
	if err != nil {
		return 1, err
	}
	bi, err := parseBucketInfo(raw)
	if err != nil {
		return 1, fmt.Errorf("%s: %w", infoPath, err)
	}
	if o.wrongSecret {
		bi.Spec.S3.AccessSecretKey = "x" + bi.Spec.S3.AccessSecretKey
	}
	name := bi.Spec.BucketName
	if o.bucket != "" {
		name = o.bucket
	}
	cl := client(bi.Spec.S3)
	bucket := aws.String(name)
	switch {
	case len(args) == 3 && args[0] == "put":
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(args[1]), Body: bytes.NewReader([]byte(args[2]))})
		if err == nil {
			fmt.Fprintf(out, "put %s/%s (%d bytes) at %s\n", name, args[1], len(args[2]), bi.Spec.S3.Endpoint)
		}
	case len(args) == 2 && args[0] == "get":
		var got *s3.GetObjectOutput
		if got, err = cl.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(args[1])}); err == nil {
			defer got.Body.Close()
			dst := out
			if o.expectRefused {
				dst = io.Discard // a served object is the failure, not the output
			}
			_, err = io.Copy(dst, got.Body)
		}
	default:
		return 2, errors.New(usage)
	}
	var re *awshttp.ResponseError
	refused := errors.As(err, &re) && (re.HTTPStatusCode() == 401 || re.HTTPStatusCode() == 403)
	switch {
	case o.expectRefused && refused:
		fmt.Fprintf(out, "refused: HTTP %d\n", re.HTTPStatusCode())
		return 0, nil
	case o.expectRefused && err == nil:
		return 1, fmt.Errorf("%s %s/%s was served, want it refused", args[0], name, args[1])
	case err != nil:
		return 1, fmt.Errorf("%s %s/%s: %w", args[0], name, args[1], err)
	}
	return 0, nil
}

// bucketInfo is the part of COSI v1alpha1's BucketInfo (sigs.k8s.io/container-object-storage-
// interface/client/apis, v0.2.2) an S3 application reads, with its JSON names.
type bucketInfo struct {
	Spec struct {
		BucketName         string    `json:"bucketName"`
		AuthenticationType string    `json:"authenticationType"`
		S3                 *secretS3 `json:"secretS3"`
	} `json:"spec"`
}

type secretS3 struct {
	Endpoint        string `json:"endpoint"`
	Region          string `json:"region"`
	AccessKeyID     string `json:"accessKeyID"`
	AccessSecretKey string `json:"accessSecretKey"`
}

// parseBucketInfo decodes a BucketInfo and wants everything an S3 client needs in it.
func parseBucketInfo(raw []byte) (*bucketInfo, error) {
	var bi bucketInfo
	if err := json.Unmarshal(raw, &bi); err != nil {
		return nil, fmt.Errorf("BucketInfo is not JSON: %w", err)
	}
	s := bi.Spec.S3
	switch {
	case bi.Spec.BucketName == "":
		return nil, errors.New("BucketInfo has no spec.bucketName")
	case s == nil:
		return nil, errors.New("BucketInfo has no spec.secretS3")
	case s.Endpoint == "" || s.Region == "" || s.AccessKeyID == "" || s.AccessSecretKey == "":
		// Which are missing, never the values.
		return nil, fmt.Errorf("BucketInfo secretS3 lacks a field (endpoint set %t, region set %t, accessKeyID set %t, accessSecretKey set %t)",
			s.Endpoint != "", s.Region != "", s.AccessKeyID != "", s.AccessSecretKey != "")
	}
	return &bi, nil
}

// client is an S3 client of the BucketInfo: path-style addressing (memorys3 serves no virtual
// hosts) and no retries, so that a refusal shows on the first request.
func client(in *secretS3) *s3.Client {
	return s3.New(s3.Options{
		Region:       in.Region,
		BaseEndpoint: aws.String(in.Endpoint),
		UsePathStyle: true,
		Retryer:      aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: in.AccessKeyID, SecretAccessKey: in.AccessSecretKey}, nil
		}),
	})
}
