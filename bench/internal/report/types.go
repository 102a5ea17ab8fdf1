package report

import "github.com/mailroom-go/mailroom/bench/internal/spec"

// Point is one measured point (the median round of its runs).
type Point struct {
	Op         string  `json:"op"`
	Path       string  `json:"path"`
	Payload    string  `json:"payload"`
	Writers    int     `json:"writers"`
	WriterKind string  `json:"writer_kind"` // actor | goroutine
	Receivers  string  `json:"receivers"`   // per-writer | one
	PaceMs     float64 `json:"pace_ms"`     // 0: unpaced
	Round      int     `json:"round"`       // which round this is (0-based)
	Rounds     int     `json:"rounds"`      // how many rounds ran (points list: the median one)

	PerWriter    int     `json:"per_writer"`
	Ops          int64   `json:"ops"`        // measured operations (warm-up excluded)
	WarmupOps    int64   `json:"warmup_ops"` // operations before measuring, same rule for every path
	IntendedPerS float64 `json:"intended_per_s"`
	AchievedPerS float64 `json:"achieved_per_s"`
	ElapsedS     float64 `json:"elapsed_s"`
	IdealS       float64 `json:"ideal_s"`       // M × pace; 0 unpaced
	AchievedFrac float64 `json:"achieved_frac"` // achieved / intended; 0 unpaced

	SenderRSSMB      float64 `json:"sender_rss_mb"`   // peak (VmHWM) over the process's life
	ReceiverRSSMB    float64 `json:"receiver_rss_mb"` // same
	SenderBaseMB     float64 `json:"sender_base_mb"`  // resident before the point's actors were spawned
	ReceiverBaseMB   float64 `json:"receiver_base_mb"`
	KiBPerWriter     float64 `json:"kib_per_writer"` // (both peaks − both bases) / writers
	CPUSPerMillion   float64 `json:"cpu_s_per_million"`
	SenderCPUS       float64 `json:"sender_cpu_s"`
	ReceiverCPUS     float64 `json:"receiver_cpu_s"`
	WireBytesPerMsg  float64 `json:"wire_bytes_per_msg"`    // both processes' wchar delta / ops
	RuntimeBytesPerM float64 `json:"runtime_bytes_per_msg"` // mailroom: remote Stats BytesOut of both nodes / ops; 0 for protoactor

	MeanBatch      float64  `json:"mean_batch"` // pooled: messages per batch frame toward the receiver; 0 where not measured
	BatchHist      []uint64 `json:"batch_hist,omitempty"`
	ReplyMeanBatch float64  `json:"reply_mean_batch,omitempty"` // pooled calls: replies per batch frame back

	// Heap allocations per operation in each process over the measured
	// phase (runtime.MemStats.Mallocs delta / ops: everything the process
	// allocated, runtime, harness and background work alike; the payload
	// is built once and shared, so it adds none).
	SenderAllocsPerMsg   float64 `json:"sender_allocs_per_msg"`
	ReceiverAllocsPerMsg float64 `json:"receiver_allocs_per_msg"`

	LatP50Ms float64 `json:"lat_p50_ms,omitempty"` // calls: round-trip latency
	LatP99Ms float64 `json:"lat_p99_ms,omitempty"`
	LatMaxMs float64 `json:"lat_max_ms,omitempty"`

	// Noise: the share of the machine's CPU (all cores) busy during the
	// measured phase but not in the two node processes nor in interrupt
	// work: other processes (the controller's polling included) and
	// hypervisor steal. Runs before the irq_cpu_frac field existed
	// counted interrupt work (loopback TCP receive processing of the
	// point's own traffic too) here. IRQCPUFrac is that interrupt share,
	// for any process. LoadAvg1 is the load average after the phase.
	OtherCPUFrac float64 `json:"other_cpu_frac"`
	IRQCPUFrac   float64 `json:"irq_cpu_frac"`
	LoadAvg1     float64 `json:"load_avg_1m"`

	Errors   int64  `json:"errors"` // dead letters, failed calls/casts, miscounts, on both nodes
	TimedOut bool   `json:"timed_out,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Key identifies a point across rounds.
func (p Point) Key() string {
	return p.Op + "/" + p.Path + "/" + p.Payload + "/" + itoa(p.Writers) + "/" + p.WriterKind + "/" + p.Receivers + "/" + ftoa(p.PaceMs)
}

// normalize fills what results written before writer kinds and
// receivers existed leave empty: those points were writer actors, one
// receiver per writer.
func (p *Point) normalize() {
	if p.WriterKind == "" {
		p.WriterKind = spec.KindActor
	}
	if p.Receivers == "" {
		p.Receivers = spec.ReceiversPerWriter
	}
}

// Raw is the raw-TCP reference.
type Raw struct {
	FrameBytes int `json:"frame_bytes"`
	WriteBytes int `json:"write_bytes"` // bytes per write call
	// MsgsPerS by connection count ("1", "2"): frames counted by the
	// receiver per second, median of rounds.
	MsgsPerS map[string]float64 `json:"msgs_per_s"`
	// UnbatchedMsgsPerS: the same with one write call per frame.
	UnbatchedMsgsPerS map[string]float64 `json:"unbatched_msgs_per_s"`
	Rounds            int                `json:"rounds"`

	// Ping-pong over one connection: a call-shaped frame of the bytes
	// payload and its reply, one at a time; RTTs round trips per round
	// (after a warm-up), one round right before each round of the single
	// caller; the median over rounds of each round's p50 and p99.
	CallFrameBytes  int       `json:"call_frame_bytes,omitempty"`
	ReplyFrameBytes int       `json:"reply_frame_bytes,omitempty"`
	RTTs            int       `json:"rtts,omitempty"`
	RTTP50Ms        float64   `json:"rtt_p50_ms,omitempty"`
	RTTP99Ms        float64   `json:"rtt_p99_ms,omitempty"`
	RTTP50sMs       []float64 `json:"rtt_p50s_ms,omitempty"` // every round's p50
	RTTP99sMs       []float64 `json:"rtt_p99s_ms,omitempty"`
}

// Machine says where a run ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memory_gib"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// Memory is memory per writer of the paced pooled send sweep: (peaks −
// bases) / writers by writers, and the marginal cost between consecutive
// sweep points, (peaks(N2) − peaks(N1)) / (N2 − N1), keyed "N1-N2". Both
// processes, KiB. It should stay flat.
type Memory struct {
	PooledKiBPerWriter         map[string]float64 `json:"pooled_kib_per_writer"`
	PooledMarginalKiBPerWriter map[string]float64 `json:"pooled_marginal_kib_per_writer"`
}

// Result is one run.
type Result struct {
	Name           string   `json:"name"`
	Command        string   `json:"command"`
	Started        string   `json:"started"`
	WallS          float64  `json:"wall_s"`
	Machine        Machine  `json:"machine"`
	RawTCPMsgsPerS float64  `json:"raw_tcp_msgs_per_s"` // one connection, data-sized frames
	RawTCPRTTP50Ms float64  `json:"raw_tcp_rtt_p50_ms"` // ping-pong, call-sized frames
	RawTCP         Raw      `json:"raw_tcp"`
	Points         []Point  `json:"points"` // the median round of each point
	Rounds         []Point  `json:"rounds"` // every run
	Targets        []Target `json:"targets"`
	Memory         Memory   `json:"memory"`
	// DecodeAllocs: heap allocations of decoding one message of each
	// payload into a fresh value (benchpb.DecodeAllocs), measured by the
	// controller: the decoded message's own, the receiver's floor.
	DecodeAllocs map[string]int `json:"decode_allocs"`
	Notes        []string       `json:"notes"`
}
