package kubesuite

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// Capability names and timeout names of the suite (k8s.io/kubernetes v1.36.1,
// test/e2e/storage/framework/testdriver.go and test/e2e/framework/timeouts.go). The suite
// ignores a name it does not know without a word, so a misspelt one would test something else
// than what was asked: Describe refuses it instead.
var (
	capabilityNames = []string{
		"persistence", "block", "fsGroup", "volumeMountGroup", "exec", "snapshotDataSource",
		"snapshotMetadata", "groupSnapshot", "pvcDataSource", "multipods", "RWX",
		"controllerExpansion", "nodeExpansion", "offlineExpansion", "onlineExpansion",
		"volumeLimits", "singleNodeVolume", "topology", "capacity",
		"FSResizeFromSourceNotSupported", "readWriteOncePod", "multiplePVsSameID",
		"capReadOnlyMany", "seLinuxMount",
	}
	timeoutNames = []string{
		"Poll", "PodStart", "PodStartShort", "PodStartSlow", "PodDelete", "ClaimProvision",
		"DataSourceProvision", "ClaimProvisionShort", "ClaimBound", "PVReclaim", "PVBound",
		"PVCreate", "PVDelete", "PVDeleteSlow", "SnapshotCreate", "SnapshotDelete",
		"SnapshotControllerMetrics", "SystemPodsStartup", "NodeSchedulable",
		"SystemDaemonsetStartup", "NodeNotReady",
	}
)

// Validate refuses options the suite would misread or ignore: capability and timeout names it
// does not have, timeouts that are no positive duration, sizes that are no positive Kubernetes
// quantity or a MinSize above MaxSize, a MaxFileSize that is no whole number of bytes, stress
// counts that are negative or incomplete, a VolumeAttributesClass parameter without a name. The
// suite reads the definition only once a run has started, and then a misspelt capability is
// silently off, a bad timeout silently resets every timeout to its default, and a bad size fails
// every spec. Describe calls it first; a tool can call it before it connects to the driver.
func (o Options) Validate() error {
	var errs []error
	for name := range o.Capabilities {
		if !slices.Contains(capabilityNames, name) {
			errs = append(errs, fmt.Errorf("capability %q: the suite has no such capability (it has %s)", name, strings.Join(capabilityNames, ", ")))
		}
	}
	for name, v := range o.Timeouts {
		if !slices.Contains(timeoutNames, name) {
			errs = append(errs, fmt.Errorf("timeout %q: the suite has no such timeout (it has %s)", name, strings.Join(timeoutNames, ", ")))
		} else if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("timeout %s=%q: want a positive Go duration such as 10m", name, v))
		}
	}
	var minSize, maxSize *big.Rat
	for _, s := range []struct {
		name  string
		value string
		to    **big.Rat
	}{{"MinSize", o.MinSize, &minSize}, {"MaxSize", o.MaxSize, &maxSize}} {
		if s.value == "" {
			continue
		}
		q, err := parseQuantity(s.value)
		if err == nil && q.Sign() <= 0 {
			err = errors.New("a size must be positive")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", s.name, s.value, err))
			continue
		}
		*s.to = q
	}
	if minSize != nil && maxSize != nil && minSize.Cmp(maxSize) > 0 {
		errs = append(errs, fmt.Errorf("MinSize %s is larger than MaxSize %s", o.MinSize, o.MaxSize))
	}
	if o.MaxFileSize != "" {
		q, err := parseQuantity(o.MaxFileSize)
		if err == nil && (!q.IsInt() || q.Sign() <= 0 || !q.Num().IsInt64()) {
			err = errors.New("a file size must be a positive whole number of bytes")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("MaxFileSize %q: %w", o.MaxFileSize, err))
		}
	}
	switch st := o.Stress; {
	case st.Pods < 0 || st.Restarts < 0 || st.Snapshots < 0:
		errs = append(errs, fmt.Errorf("Stress %+v: counts cannot be negative", st))
	case st.Pods == 0 && (st.Restarts > 0 || st.Snapshots > 0):
		errs = append(errs, fmt.Errorf("Stress %+v: restarts and snapshots need Pods, which enables the stress tests", st))
	case st.Pods > 0 && st.Restarts == 0:
		// The suite fails (not skips) a stress test whose count is not positive.
		errs = append(errs, fmt.Errorf("Stress %+v: volume-stress needs Restarts too", st))
	}
	for k := range o.ModifyParameters {
		if k == "" {
			errs = append(errs, errors.New("ModifyParameters: a VolumeAttributesClass parameter needs a name"))
		}
	}
	return errors.Join(errs...)
}

// quantitySuffixes are the suffixes of a Kubernetes quantity (k8s.io/apimachinery
// resource.Quantity) with their multipliers; "e"/"E" exponents are handled apart.
var quantitySuffixes = map[string]*big.Rat{
	"":   big.NewRat(1, 1),
	"Ki": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 10)),
	"Mi": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 20)),
	"Gi": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 30)),
	"Ti": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 40)),
	"Pi": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 50)),
	"Ei": new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 60)),
	"n":  big.NewRat(1, 1e9),
	"u":  big.NewRat(1, 1e6),
	"m":  big.NewRat(1, 1e3),
	"k":  big.NewRat(1e3, 1),
	"M":  big.NewRat(1e6, 1),
	"G":  big.NewRat(1e9, 1),
	"T":  big.NewRat(1e12, 1),
	"P":  big.NewRat(1e15, 1),
	"E":  big.NewRat(1e18, 1),
}

// parseQuantity reads a Kubernetes quantity ("1Mi", "1.5G", "2e3") as the suite's
// resource.ParseQuantity does: a signed decimal number and one suffix, binary (Ki..Ei), decimal
// (n, u, m, k..E) or an exponent (e3, E-2). It links no Kubernetes module, so a driver's tooling
// can use this package cheaply.
func parseQuantity(s string) (*big.Rat, error) {
	bad := fmt.Errorf("not a Kubernetes quantity (a number and a suffix such as Mi, Gi or G)")
	num, rest := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("+-.0123456789", r) }); i >= 0 {
		num, rest = s[:i], s[i:]
	}
	// After a sign, only digits and at most one point; a sign only first.
	digits := strings.TrimLeft(num, "+-")
	if len(num)-len(digits) > 1 || digits == "" || digits == "." || strings.ContainsAny(digits, "+-") || strings.Count(digits, ".") > 1 {
		return nil, bad
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, bad
	}
	if mult, ok := quantitySuffixes[rest]; ok {
		return v.Mul(v, mult), nil
	}
	if rest[0] != 'e' && rest[0] != 'E' {
		return nil, bad
	}
	exp := strings.TrimPrefix(rest[1:], "+")
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimPrefix(exp, "-")
	// Quantities are bounded far below 10^±64; a larger exponent is no size.
	if exp == "" || len(exp) > 2 || strings.Trim(exp, "0123456789") != "" {
		return nil, bad
	}
	n := 0
	for _, c := range exp {
		n = n*10 + int(c-'0')
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
	if neg {
		p.Inv(p)
	}
	return v.Mul(v, p), nil
}
