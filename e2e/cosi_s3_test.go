package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	cosiapi "sigs.k8s.io/container-object-storage-interface/client/apis"
)

// bucketInfo decodes what the v1alpha1 sidecar writes into a BucketAccess's Secret: one key,
// BucketInfo, holding a JSON BucketInfo object.
func bucketInfo(s *corev1.Secret) (*cosiapi.BucketInfo, error) {
	raw, ok := s.Data["BucketInfo"]
	if !ok {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		return nil, fmt.Errorf("secret %s has no BucketInfo key (keys %v)", s.Name, keys)
	}
	var bi cosiapi.BucketInfo
	if err := json.Unmarshal(raw, &bi); err != nil {
		return nil, fmt.Errorf("secret %s: BucketInfo: %w", s.Name, err)
	}
	if bi.Spec.S3 == nil {
		return nil, fmt.Errorf("secret %s: BucketInfo has no secretS3", s.Name)
	}
	return &bi, nil
}

// s3Client is the client an application would make of a BucketInfo: the endpoint, region and
// keys it holds, path-style addressing (memorys3's), and no retries, so that a refusal shows on
// the first request.
func s3Client(in *cosiapi.SecretS3) *s3.Client {
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

// httpStatus is the HTTP status of a failed S3 call, 0 when the call got no answer.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
