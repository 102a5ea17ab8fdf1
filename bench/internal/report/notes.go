package report

// Notes are the measurement rules every result carries.
func Notes() []string {
	return []string{
		"Two OS processes per point (sender, receiver), fresh for every point, on loopback; a third (the controller) only polls them over pipes.",
		"Counted where completed: send at the receiver actor (delivered), cast when the function ran on the receiver, call when the reply returned to the writer. The lean reference counts in its consumer, exactly as a receiving actor does.",
		"Writers are actors (each sends from its own PID) or plain goroutines calling the system's root handle (mailroom System.SendNamed / System.Call; protoactor-go Root.Send / Root.RequestFuture), as an HTTP handler would. Receivers: one actor per writer (r<i>), or one actor (r0) for all writers.",
		"lean is a reference, not a runtime: goroutines marshal with proto into one buffer shared under a mutex, one writer goroutine writes whatever accumulated to one TCP connection; the receiver's reader unmarshals each frame into a fresh message and appends each read's run to a mutex-and-slice mailbox that one consumer drains and counts. No addressing, type names, acknowledgements or liveness.",
		"Warm-up: max(1, 20000/writers) unpaced operations per writer of the same op and payload, completed before any sample; identical for every path.",
		"cpu_s_per_million: utime+stime of both processes over the measured phase, per million operations.",
		"sender_allocs_per_msg / receiver_allocs_per_msg: each process's heap allocations over the measured phase (runtime.MemStats.Mallocs, tiny allocations included, as testing.AllocsPerRun counts them) divided by the operations: the runtime's, the harness's (nothing per operation on a send: the payload is built once and shared) and background work's (heartbeats, the controller's polls: well under 0.01 per operation). decode_allocs is what decoding one message into a fresh value allocates, the receiver's floor.",
		"wire_bytes_per_msg: /proc/<pid>/io wchar of both processes over the measured phase, per operation (every write call: data, acks, replies, heartbeats, HTTP/2 framing for protoactor, and a few hundred bytes of control-pipe answers). runtime_bytes_per_msg: mailroom's own remote Stats BytesOut of both nodes (lean: the bytes it wrote).",
		"sender_rss_mb / receiver_rss_mb: VmHWM, the process's peak resident set over the whole point. kib_per_writer: (both peaks - both residents before the point's actors were spawned) / writers.",
		"mean_batch: pooled path only (proxypool Stats of the sender: messages per batch frame toward the receiver); 0 where not measured (native writes frames one message each; protoactor batches inside its endpoint writer and does not report it).",
		"protoactor-go has no cast: its cast points send to a named counting actor per writer on the receiver (the same as its send points). Its call is RequestFuture to that actor, which responds; mailroom's call runs a registered function. protoactor-go encodes data-vt with proto.Marshal like any message.",
		"Latency: every call's round trip in a histogram with buckets 1/128 of their value wide (p50, p99: a bucket's midpoint). The raw TCP ping-pong is one connection, a call-shaped frame of the bytes payload out and a reply-shaped frame back, one at a time, after the same warm-up as the single caller.",
		"Both runtimes run with their default configuration (mailroom: remote and proxypool defaults, pool size = GOMAXPROCS = 2; protoactor-go: remote.Configure defaults, gRPC's 4 MiB receive limit included).",
		"Noise: other_cpu_frac is the share of the machine's CPU busy outside the two node processes during the measured phase (runs without irq_cpu_frac also counted interrupt work there); points that differ only in path run back to back, unpaced ones in rotated rounds, and the tables keep the median round (failed rounds are listed, not used). Targets take the median of each figure over the rounds.",
		"Paced writers: writer i starts at i*pace/N and does its k-th operation at start+k*pace, or at once if it is late, never more than one to catch up; one timing wheel (1 ms slots) on the sender paces every path's writers.",
	}
}
