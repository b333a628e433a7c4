package drivertest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// memBuckets is memdriver's bucket backend that can be armed to panic once in a grant, after the
// grant has minted and stored the account's keys: what COSIOptions.ArmPanic asks for.
type memBuckets struct {
	*memdriver.Buckets
	armed atomic.Bool
}

func (m *memBuckets) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	a, err := m.Buckets.GrantBucketAccess(ctx, req)
	if err == nil && m.armed.CompareAndSwap(true, false) {
		panic(a) // the answer, keys and all, as a careless backend would
	}
	return a, err
}

func memBucketConfig(b bucket.Provisioner, multi bool, versions ...bucket.Version) plugin.Config {
	return plugin.Config{Name: "mem-s3.csikit.dev", VendorVersion: "1.0.0", CheckResponses: true,
		COSI: &plugin.COSIConfig{Provisioner: b, Protocols: []bucket.Protocol{bucket.S3}, Versions: versions, MultiBucketAccess: multi}}
}

// memCOSIOptions are what the suite cannot know about memdriver: any parameters are accepted,
// and different ones conflict; a key works while it is live.
func memCOSIOptions(m *memBuckets, multi bool) drivertest.COSIOptions {
	return drivertest.COSIOptions{
		BucketParameters:             map[string]string{"tier": "gold"},
		IncompatibleBucketParameters: map[string]string{"tier": "lead"},
		AccessParameters:             map[string]string{"policy": "app"},
		IncompatibleAccessParameters: map[string]string{"policy": "admin"},
		MultiBucketAccess:            multi,
		CheckCredentials: func(_ context.Context, p bucket.Protocol, b bucket.Bucket, c bucket.Credentials) error {
			switch {
			case p != bucket.S3 || c.S3 == nil || b.S3 == nil:
				return errors.New("memdriver serves S3 only")
			case !m.KeyLive(c.S3.AccessKeyID):
				return errors.New("the access key is not live")
			}
			return nil
		},
		ArmPanic: func() { m.armed.Store(true) },
	}
}

func TestCOSIMemdriverBothVersions(t *testing.T) {
	for _, multi := range []bool{true, false} {
		name := "one bucket per access"
		if multi {
			name = "several buckets per access"
		}
		t.Run(name, func(t *testing.T) {
			m := &memBuckets{Buckets: memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")}
			res := drivertest.COSI(t, memBucketConfig(m, multi), memCOSIOptions(m, multi))
			if res.Ran == 0 || res.Ran != res.Passed || res.Failed != 0 || res.Skipped != 0 {
				t.Errorf("Result: %d ran, %d passed, %d failed, %d skipped (%v); want every rule of both versions run and passed",
					res.Ran, res.Passed, res.Failed, res.Skipped, res.Skips)
			}
		})
	}
}

// With one version configured, the other is skipped (UNIMPLEMENTED on DriverGetInfo) and the
// served one passes.
func TestCOSIMemdriverOneVersion(t *testing.T) {
	for _, v := range []bucket.Version{bucket.V1Alpha1, bucket.V1Alpha2} {
		t.Run(string(v), func(t *testing.T) {
			m := &memBuckets{Buckets: memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")}
			res := drivertest.COSI(t, memBucketConfig(m, false, v), memCOSIOptions(m, false))
			other := bucket.V1Alpha1
			if v == bucket.V1Alpha1 {
				other = bucket.V1Alpha2
			}
			if res.Ran == 0 || res.Failed != 0 || res.Skipped == 0 {
				t.Errorf("Result: %d ran, %d failed, %d skipped", res.Ran, res.Failed, res.Skipped)
			}
			for name, reason := range res.Skips {
				if !strings.HasPrefix(name, string(other)+"/") || !strings.Contains(reason, "does not serve COSI "+string(other)) {
					t.Errorf("Result.Skips[%q] = %q; want only %s's rules, skipped as not served", name, reason, other)
				}
			}
		})
	}
}

// The zero COSIOptions run everything that needs no knowledge of the driver.
func TestCOSIMemdriverZeroOptions(t *testing.T) {
	res := drivertest.COSI(t, memBucketConfig(memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1"), false), drivertest.COSIOptions{})
	if res.Failed != 0 || res.Ran == 0 {
		t.Errorf("Result: %d ran, %d failed: %v", res.Ran, res.Failed, res.Failures)
	}
	// What the zero options leave out, in both versions, each skip naming the option to set.
	want := []string{
		"DriverCreateBucket of an existing name with incompatible parameters is ALREADY_EXISTS",
		"granted credentials work and stop working at revoke",
	}
	if res.Skipped != 2*len(want) {
		t.Errorf("Result: %d skipped, want %d: %v", res.Skipped, 2*len(want), res.Skips)
	}
	for _, v := range []string{"v1alpha1", "v1alpha2"} {
		for _, rule := range want {
			if reason := res.Skips[v+"/"+rule]; !strings.Contains(reason, "set COSIOptions.") {
				t.Errorf("Result.Skips[%q] = %q, want the option to set", v+"/"+rule, reason)
			}
		}
	}
}
