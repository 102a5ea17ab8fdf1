// Package report holds a run's results (the JSON shape external checks
// read), their median over rounds, the target ratios, and renders them as
// a markdown report and SVG plots (package svg draws; this package picks
// the series).
//
// JSON shape: top-level raw_tcp_msgs_per_s (one connection, data-sized
// frames) and points, one object per point with at least op, path,
// payload, writers, pace_ms (0 unpaced), intended_per_s (0 unpaced),
// achieved_per_s, elapsed_s, sender_rss_mb, receiver_rss_mb,
// cpu_s_per_million, wire_bytes_per_msg, mean_batch, errors.
package report
