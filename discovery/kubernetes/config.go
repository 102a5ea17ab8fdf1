package kubernetes

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// Config configures a Kubernetes provider. Zero fields take the defaults
// documented on each.
type Config struct {
	// Namespace holds the pods and the leases. Default: the POD_NAMESPACE
	// environment variable, else the service account's namespace file
	// (in-cluster), else "default".
	Namespace string
	// LabelSelector picks the pods of the cluster, e.g. "app=shop".
	// Required: a provider that listed every pod of a namespace would
	// take strangers for members.
	LabelSelector string
	// PodName is this node's pod. Default: the POD_NAME environment
	// variable (set it from the downward API, see deploy/kubernetes),
	// else the hostname, which is the pod name in a pod.
	PodName string
	// Kubeconfig is a kubeconfig file for out-of-cluster use. Default:
	// the KUBECONFIG environment variable; when both are empty the
	// in-cluster config (service account token and CA) is used.
	Kubeconfig string
	// REST, when set, is used as is instead of Kubeconfig or in-cluster.
	REST *rest.Config
	// LeasePrefix names each node's coordination.k8s.io/v1 Lease:
	// "<LeasePrefix><node>". Default "mailroom-".
	LeasePrefix string
	// LeaseTTL is the lease duration: a node that does not renew its lease
	// for LeaseTTL (it froze, or lost the API) is reported down by the
	// others. Whole seconds (the Lease field is in seconds), at least 1s.
	// Default 10s.
	LeaseTTL time.Duration
	// RenewEvery is how often the lease is renewed; below LeaseTTL.
	// Default LeaseTTL/3.
	RenewEvery time.Duration
	// BackoffMin and BackoffMax bound the wait after a failed API call,
	// doubling per consecutive failure with jitter. Defaults 200ms, 5s.
	BackoffMin, BackoffMax time.Duration
	// Logger receives API errors, relists and self-death. Default
	// slog.Default().
	Logger *slog.Logger
}

// Default values of Config.
const (
	DefaultNamespace   = "default"
	DefaultLeasePrefix = "mailroom-"
	DefaultLeaseTTL    = 10 * time.Second
	DefaultBackoffMin  = 200 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
)

const saNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

var leasePrefixRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[-a-z0-9.])?$`)

func (c Config) withDefaults() (Config, error) {
	if c.Namespace == "" {
		c.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if c.Namespace == "" {
		if b, err := os.ReadFile(saNamespaceFile); err == nil {
			c.Namespace = string(b)
		}
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.PodName == "" {
		c.PodName = os.Getenv("POD_NAME")
	}
	if c.PodName == "" {
		h, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("discovery: kubernetes config: PodName is empty and the hostname is unknown: %w", err)
		}
		c.PodName = h
	}
	if c.Kubeconfig == "" {
		c.Kubeconfig = os.Getenv("KUBECONFIG")
	}
	if c.LeasePrefix == "" {
		c.LeasePrefix = DefaultLeasePrefix
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.LeaseTTL / 3
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("discovery: kubernetes config: %s: %s", field, fmt.Sprintf(format, args...))
	}
	if c.LabelSelector == "" {
		return c, bad("LabelSelector", "is empty; want the label selector of the cluster's pods, e.g. app=shop")
	}
	if _, err := labels.Parse(c.LabelSelector); err != nil {
		return c, bad("LabelSelector", "%q: %v", c.LabelSelector, err)
	}
	switch {
	case !leasePrefixRE.MatchString(c.LeasePrefix):
		return c, bad("LeasePrefix", "%q: want lower-case letters, digits, '-' or '.'", c.LeasePrefix)
	case c.LeaseTTL < time.Second || c.LeaseTTL%time.Second != 0:
		return c, bad("LeaseTTL", "is %v, want whole seconds, at least 1s (0 means %v)", c.LeaseTTL, DefaultLeaseTTL)
	case c.RenewEvery <= 0 || c.RenewEvery >= c.LeaseTTL:
		return c, bad("RenewEvery", "is %v, want more than 0 and less than LeaseTTL (%v)", c.RenewEvery, c.LeaseTTL)
	case c.BackoffMin <= 0:
		return c, bad("BackoffMin", "is %v, want more than 0", c.BackoffMin)
	case c.BackoffMax < c.BackoffMin:
		return c, bad("BackoffMax", "is %v, want at least BackoffMin (%v)", c.BackoffMax, c.BackoffMin)
	}
	return c, nil
}
