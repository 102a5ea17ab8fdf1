package services

import (
	"strconv"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns a Prometheus collector over this node's services
// accessors; register it with your registry:
//
//	reg.MustRegister(svc.Collector())
//
// Metrics (all read at scrape time, no background work):
//
//	mailroom_services_calls_total{service,function,result}        counter
//	mailroom_services_retries_total{service,function,reason}      counter
//	mailroom_services_pending_calls{node,incarnation}             gauge
//	mailroom_services_pending_oldest_seconds{node,incarnation}    gauge
//	mailroom_services_inflight_calls{service,version,function}    gauge
//	mailroom_services_providers{service,version,node,draining}    gauge (1 per provider)
//	mailroom_services_drain_acks_total{direction}                 counter (sent, received)
func (s *Services) Collector() prometheus.Collector { return &collector{s: s} }

var (
	descCalls = prometheus.NewDesc("mailroom_services_calls_total",
		"Service calls this node finished, by result (ok, executed, not_executed, may_have_executed).",
		[]string{"service", "function", "result"}, nil)
	descRetries = prometheus.NewDesc("mailroom_services_retries_total",
		"Retries this node made, by the reason the attempt before failed.",
		[]string{"service", "function", "reason"}, nil)
	descPending = prometheus.NewDesc("mailroom_services_pending_calls",
		"Service calls this node is waiting on, per provider node incarnation.",
		[]string{"node", "incarnation"}, nil)
	descOldest = prometheus.NewDesc("mailroom_services_pending_oldest_seconds",
		"Age of the oldest service call this node is waiting on, per provider node incarnation.",
		[]string{"node", "incarnation"}, nil)
	descInflight = prometheus.NewDesc("mailroom_services_inflight_calls",
		"Calls running now in the functions this node provides.",
		[]string{"service", "version", "function"}, nil)
	descProviders = prometheus.NewDesc("mailroom_services_providers",
		"Providers this node knows (1 each), with their draining flag.",
		[]string{"service", "version", "node", "draining"}, nil)
	descAcks = prometheus.NewDesc("mailroom_services_drain_acks_total",
		"Drain acknowledgements sent to stopping providers and received while stopping.",
		[]string{"direction"}, nil)
)

type collector struct{ s *Services }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descRetries, descPending, descOldest, descInflight, descProviders, descAcks} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	for _, v := range s.Calls() {
		ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(v.Count), v.Service, v.Function, v.Result)
	}
	for _, v := range s.Retries() {
		ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(v.Count), v.Service, v.Function, v.Reason)
	}
	for _, p := range s.Pending() {
		inc := actor.FormatIncarnation(p.Incarnation)
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(p.Count), p.Node, inc)
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, p.Oldest.Seconds(), p.Node, inc)
	}
	for _, f := range s.InFlight() {
		ch <- prometheus.MustNewConstMetric(descInflight, prometheus.GaugeValue, float64(f.Count), f.Service, f.Version, f.Function)
	}
	for _, name := range s.serviceNames() {
		for _, p := range s.Providers(name) {
			ch <- prometheus.MustNewConstMetric(descProviders, prometheus.GaugeValue, 1, name, p.Version.String(), p.Node, strconv.FormatBool(p.Draining))
		}
	}
	sent, received := s.DrainAcks()
	ch <- prometheus.MustNewConstMetric(descAcks, prometheus.CounterValue, float64(sent), "sent")
	ch <- prometheus.MustNewConstMetric(descAcks, prometheus.CounterValue, float64(received), "received")
}

// serviceNames lists the services the registry knows.
func (s *Services) serviceNames() []string {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, e := range s.reg.entries {
		for _, r := range e.recs {
			if !seen[r.Name] {
				seen[r.Name] = true
				out = append(out, r.Name)
			}
		}
	}
	return out
}
