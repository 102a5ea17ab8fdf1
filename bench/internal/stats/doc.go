// Package stats has the small statistics the benchmark reports: a
// concurrent latency histogram with log-linear buckets (a few percent of
// resolution, fixed memory, no locks on the hot path), its percentiles,
// and the median of repeated measurements.
package stats
