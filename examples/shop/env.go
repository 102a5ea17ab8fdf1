package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	k8sdisc "github.com/mailroom-go/mailroom/discovery/kubernetes"
)

// envVars is every environment variable the shop reads, with what it
// means. deploy/kubernetes/shop.yaml sets these, and the Kubernetes test
// (discovery/kubernetes, TestShopOnKubernetes) runs the shop with exactly
// the env of the manifests, so a name the manifests get wrong fails it.
// A SHOP_* or MAILROOM_K8S_* variable not listed here stops the shop at
// start (a typo in a manifest is an error, not a default).
var envVars = []struct{ name, doc string }{
	{"SHOP_ROLE", "stock, orders or api: run that node; unset: the driver, which runs all three as child processes"},
	{"SHOP_NAME", "the node's name; default the role. Others find stock and orders by the role's name, so only the api (reached by HTTP) may run several nodes, each its own name (a pod's, say)"},
	{"SHOP_STOCK", "stock's node address: where stock listens; with static discovery also where the others dial it"},
	{"SHOP_ORDERS", "orders' node address (as SHOP_STOCK)"},
	{"SHOP_API_NODE", "api's node address (as SHOP_STOCK)"},
	{"SHOP_HTTP", "where the api serves HTTP: POST /order, GET /livez, /readyz, /healthz, /inflight"},
	{"SHOP_DISCOVERY", "static (default: the nodes dial each other at SHOP_STOCK, SHOP_ORDERS) or kubernetes (discovery/kubernetes)"},
	{"SHOP_COOKIE", "the cluster cookie, at least 16 bytes; required with kubernetes discovery (a Secret), else a demo cookie"},
	{"SHOP_DRAIN_TIMEOUT", "how long a SIGTERM drain may take (Go duration); default 20s; keep it below terminationGracePeriodSeconds minus preStop"},
	{"SHOP_LOG", "1: the runtime's warnings on stderr"},
	{"SHOP_STOP_ON_STDIN", "1: also stop when stdin closes (the driver sets it for its children)"},
	{"MAILROOM_K8S_SELECTOR", "kubernetes discovery: the label selector of the shop's pods, e.g. app=shop"},
	{"POD_NAME", "kubernetes discovery: this pod's name (downward API metadata.name)"},
	{"POD_NAMESPACE", "kubernetes discovery: the namespace of the pods and leases (downward API metadata.namespace)"},
	{"POD_IP", "kubernetes discovery: the address the node advertises, with its port from the node address (downward API status.podIP)"},
	{"KUBECONFIG", "kubernetes discovery out of a cluster: the kubeconfig; in a pod leave it unset (in-cluster config)"},
}

// EnvNames is the list of variables the shop reads, one per line, for
// `shop -env` (and the test that compares it with the manifests).
func envNames() []string {
	names := make([]string, len(envVars))
	for i, v := range envVars {
		names[i] = v.name
	}
	return names
}

// checkEnv refuses a SHOP_* or MAILROOM_K8S_* variable the shop does not
// read.
func checkEnv(environ []string) error {
	known := envNames()
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(name, "SHOP_") || strings.HasPrefix(name, "MAILROOM_K8S_")) && !slices.Contains(known, name) {
			return fmt.Errorf("unknown environment variable %s (the shop reads %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

const demoCookie = "shop-demo-cookie-0123456789abcdef"

// nodeEnv is how one role's node starts, from the environment.
type nodeEnv struct {
	name      string                   // the node's name
	listen    string                   // the node's listen address
	advertise string                   // what it tells peers ("" = the listener's)
	cookie    string                   //
	seeds     func(...string) []string // static discovery: the seeds of the named peers
	disc      discovery.Provider       // kubernetes discovery, else nil
	drain     time.Duration            // SIGTERM drain deadline
	onStdin   bool                     // stop when stdin closes too
}

// addrVar is the variable that holds role's node address.
var addrVar = map[string]string{"stock": "SHOP_STOCK", "orders": "SHOP_ORDERS", "api": "SHOP_API_NODE"}

func readNodeEnv(role string) (nodeEnv, error) {
	if err := checkEnv(os.Environ()); err != nil {
		return nodeEnv{}, err
	}
	e := nodeEnv{listen: os.Getenv(addrVar[role]), cookie: os.Getenv("SHOP_COOKIE"), drain: 20 * time.Second, onStdin: os.Getenv("SHOP_STOP_ON_STDIN") == "1"}
	e.name = os.Getenv("SHOP_NAME")
	if e.name == "" {
		e.name = role
	}
	if e.listen == "" {
		return e, fmt.Errorf("%s is empty: want the %s node's address, e.g. 127.0.0.1:7946", addrVar[role], role)
	}
	if v := os.Getenv("SHOP_DRAIN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return e, fmt.Errorf("SHOP_DRAIN_TIMEOUT %q: want a positive Go duration such as 20s", v)
		}
		e.drain = d
	}
	switch d := os.Getenv("SHOP_DISCOVERY"); d {
	case "", "static":
		if e.cookie == "" {
			e.cookie = demoCookie
		}
		e.seeds = func(peers ...string) []string {
			var s []string
			for _, p := range peers {
				s = append(s, p+"="+os.Getenv(addrVar[p]))
			}
			return s
		}
	case "kubernetes":
		if e.cookie == "" {
			return e, fmt.Errorf("SHOP_COOKIE is empty: with kubernetes discovery the cookie comes from a Secret (docs/KUBERNETES.md)")
		}
		_, port, err := net.SplitHostPort(e.listen)
		if err != nil {
			return e, fmt.Errorf("%s %q: %w", addrVar[role], e.listen, err)
		}
		ip := os.Getenv("POD_IP")
		if net.ParseIP(ip) == nil {
			return e, fmt.Errorf("POD_IP %q: want the pod's IP (downward API status.podIP), which the node advertises", ip)
		}
		e.advertise = net.JoinHostPort(ip, port)
		// Namespace, PodName and Kubeconfig default to POD_NAMESPACE,
		// POD_NAME and KUBECONFIG (else the in-cluster config).
		p, err := k8sdisc.New(k8sdisc.Config{LabelSelector: os.Getenv("MAILROOM_K8S_SELECTOR"), Logger: logger()})
		if err != nil {
			return e, err
		}
		e.disc = p
	default:
		return e, fmt.Errorf("SHOP_DISCOVERY %q: want static or kubernetes", d)
	}
	return e, nil
}
