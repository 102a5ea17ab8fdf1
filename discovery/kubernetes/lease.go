package kubernetes

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/nodename"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a Member maps onto its Lease "<LeasePrefix><node>":
//
//	spec.holderIdentity        "<node>/<incarnation as 16 hex digits>" (Member.ID)
//	spec.leaseDurationSeconds  LeaseTTL
//	spec.renewTime             renewed every RenewEvery
//	label   mailroom.dev/lease          "true" (what the watch selects)
//	annotations mailroom.dev/node, incarnation, addr, pool-workers,
//	            draining ("true"/"false"), pod, pod-uid, and
//	            mailroom.dev/meta.<key> per Member.Meta entry
//
// Meta keys are 1-63 characters of [A-Za-z0-9_.-] (an annotation name
// part), values at most 1024 bytes, at most 64 entries.
const (
	annPrefix      = "mailroom.dev/"
	annNode        = annPrefix + "node"
	annIncarnation = annPrefix + "incarnation"
	annAddr        = annPrefix + "addr"
	annPool        = annPrefix + "pool-workers"
	annDraining    = annPrefix + "draining"
	annPod         = annPrefix + "pod"
	annPodUID      = annPrefix + "pod-uid"
	annMetaPrefix  = annPrefix + "meta."
	leaseLabel     = annPrefix + "lease"

	maxMeta      = 64
	maxMetaValue = 1024
)

var metaKeyRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)

func validateSelf(m discovery.Member) error {
	if !nodename.Valid(m.Node) {
		return fmt.Errorf("discovery: kubernetes: Member.Node %q: want %s", m.Node, nodename.Rule)
	}
	if m.Incarnation == 0 {
		return fmt.Errorf("discovery: kubernetes: Member.Incarnation is 0: the provider needs the node's incarnation")
	}
	if _, _, err := net.SplitHostPort(m.Addr); err != nil {
		return fmt.Errorf("discovery: kubernetes: Member.Addr %q: %w", m.Addr, err)
	}
	if m.PoolWorkers < 0 {
		return fmt.Errorf("discovery: kubernetes: Member.PoolWorkers is %d, want 0 or more", m.PoolWorkers)
	}
	if len(m.Meta) > maxMeta {
		return fmt.Errorf("discovery: kubernetes: Member.Meta has %d entries, at most %d", len(m.Meta), maxMeta)
	}
	for k, v := range m.Meta {
		if !metaKeyRE.MatchString(k) {
			return fmt.Errorf("discovery: kubernetes: Member.Meta key %q: want 1-63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric", k)
		}
		if len(v) > maxMetaValue {
			return fmt.Errorf("discovery: kubernetes: Member.Meta[%q] is %d bytes, at most %d", k, len(v), maxMetaValue)
		}
	}
	return nil
}

// leaseName is a node's lease name. Node names allow '_' and upper case,
// which object names do not, so those are escaped.
func leaseName(prefix, node string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range node {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "x%02x", r)
		}
	}
	return b.String()
}

// annotations of self's lease.
func annotations(m discovery.Member, pod, podUID string) map[string]string {
	a := map[string]string{
		annNode:        m.Node,
		annIncarnation: actor.FormatIncarnation(m.Incarnation),
		annAddr:        m.Addr,
		annPool:        strconv.Itoa(m.PoolWorkers),
		annDraining:    strconv.FormatBool(m.Draining),
		annPod:         pod,
		annPodUID:      podUID,
	}
	for k, v := range m.Meta {
		a[annMetaPrefix+k] = v
	}
	return a
}

func newLease(name string, m discovery.Member, pod, podUID string, ttl time.Duration, now time.Time) *coordv1.Lease {
	holder := m.ID()
	secs := int32(ttl / time.Second)
	t := metav1.NewMicroTime(now)
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{leaseLabel: "true"}, Annotations: annotations(m, pod, podUID)},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &t, RenewTime: &t},
	}
}

// parseLease reads a lease some node published; an error says why it is
// ignored (a stranger's lease, or a hostile one).
func parseLease(l *coordv1.Lease) (leaseState, error) {
	a := l.Annotations
	m := discovery.Member{Node: a[annNode], Addr: a[annAddr]}
	if !nodename.Valid(m.Node) {
		return leaseState{}, fmt.Errorf("lease %s: node %q: want %s", l.Name, m.Node, nodename.Rule)
	}
	inc, err := actor.ParseIncarnation(a[annIncarnation])
	if err != nil || inc == 0 {
		return leaseState{}, fmt.Errorf("lease %s: incarnation %q: want 16 hex digits, not 0", l.Name, a[annIncarnation])
	}
	m.Incarnation = inc
	if _, _, err := net.SplitHostPort(m.Addr); err != nil {
		return leaseState{}, fmt.Errorf("lease %s: addr %q: %v", l.Name, m.Addr, err)
	}
	if m.PoolWorkers, err = strconv.Atoi(a[annPool]); err != nil || m.PoolWorkers < 0 || m.PoolWorkers > 1<<16 {
		return leaseState{}, fmt.Errorf("lease %s: pool-workers %q: want 0 to 65536", l.Name, a[annPool])
	}
	m.Draining = a[annDraining] == "true"
	for k, v := range a {
		if key, ok := strings.CutPrefix(k, annMetaPrefix); ok && len(m.Meta) < maxMeta && len(v) <= maxMetaValue {
			if m.Meta == nil {
				m.Meta = map[string]string{}
			}
			m.Meta[key] = v
		}
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != m.ID() {
		return leaseState{}, fmt.Errorf("lease %s: holder is not %s", l.Name, m.ID())
	}
	ttl := time.Duration(0)
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 && *d <= 3600 {
		ttl = time.Duration(*d) * time.Second
	} else {
		return leaseState{}, fmt.Errorf("lease %s: leaseDurationSeconds: want 1 to 3600", l.Name)
	}
	renew := ""
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return leaseState{member: m, pod: a[annPod], podUID: a[annPodUID], version: l.ResourceVersion, renew: renew, ttl: ttl}, nil
}
