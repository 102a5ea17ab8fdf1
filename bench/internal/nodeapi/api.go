package nodeapi

import (
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
)

// Roles.
const (
	RoleMailroomReceiver   = "mailroom-receiver"
	RoleMailroomSender     = "mailroom-sender"
	RoleProtoactorReceiver = "protoactor-receiver"
	RoleProtoactorSender   = "protoactor-sender"
	RoleBridgeReceiver     = "bridge-receiver" // protoactor-go over mailroom's remote (the bridge)
	RoleBridgeSender       = "bridge-sender"
	RoleLeanReceiver       = "lean-receiver"
	RoleLeanSender         = "lean-sender"
	RoleRawReceiver        = "raw-receiver"
	RoleRawSender          = "raw-sender"
	RoleRawEcho            = "raw-echo" // the ping-pong reference's answering side
	RoleRawPing            = "raw-ping" // its caller
)

// Commands every node role answers (besides "quit").
const (
	CmdStatus       = "status"        // -> Status
	CmdArm          = "arm"           // Arm -> nothing
	CmdStart        = "start"         // senders: Start -> Started
	CmdStats        = "stats"         // -> Stats
	CmdProfileStart = "profile-start" // ProfileArg: CPU profile of the measured phase
	CmdProfileStop  = "profile-stop"
)

// Names used on the nodes of every mailroom path (native, pooled, the
// bridge).
const (
	SenderNode   = "sender"
	ReceiverNode = "receiver"
	Cookie       = "mailroom-bench-cookie"
	FnCast       = "bench.cast"
	FnCall       = "bench.call"
)

// ReceiverName is the registered name of the i-th receiver actor.
func ReceiverName(i int) string { return "r" + itoa(i) }

// TargetOf is the registered name of the actor writer i sends to: its
// own receiver, or "r0" when every writer sends to one.
func TargetOf(s spec.Spec, i int) string {
	if s.OneReceiver() {
		return ReceiverName(0)
	}
	return ReceiverName(i)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

// Config is a node role's configuration.
type Config struct {
	Spec spec.Spec `json:"spec"`
	// Peer is the receiver's address (senders only).
	Peer string `json:"peer,omitempty"`
}

// Ready is a node's ready line.
type Ready struct {
	Addr    string `json:"addr"`
	BaseRSS uint64 `json:"base_rss"` // resident bytes before the point's actors were spawned
}

// Arm resets the counting for a phase of PerWriter operations per writer.
type Arm struct {
	PerWriter int `json:"per_writer"`
}

// Start begins a phase on a sender.
type Start struct {
	PerWriter int   `json:"per_writer"`
	PaceNs    int64 `json:"pace_ns"` // 0: unpaced
}

// Started answers Start.
type Started struct {
	StartNs int64 `json:"start_ns"` // wall clock, Unix ns, before the first writer was told
}

// Status is a node's progress.
type Status struct {
	Connected bool           `json:"connected"` // the path is ready (pooled: the pool toward the peer is up)
	Tally     tally.Snapshot `json:"tally"`     // receivers: delivered; senders: calls returned
	Errors    int64          `json:"errors"`
}

// Stats is what a node knows about a finished phase.
type Stats struct {
	BytesOut    uint64   `json:"bytes_out"` // the runtime's own count (mailroom remote Stats), 0 if none
	BytesIn     uint64   `json:"bytes_in"`
	Batches     uint64   `json:"batches"` // pooled: batch frames written toward the peer
	BatchedMsgs uint64   `json:"batched_msgs"`
	BatchHist   []uint64 `json:"batch_hist,omitempty"` // pooled: bucket i holds sizes in (2^(i-1), 2^i]
	DeadLetters uint64   `json:"dead_letters"`
	Errors      int64    `json:"errors"` // calls that failed, casts that failed
	Executed    int64    `json:"executed"`
	LatP50Ns    int64    `json:"lat_p50_ns"`
	LatP99Ns    int64    `json:"lat_p99_ns"`
	LatMaxNs    int64    `json:"lat_max_ns"`
	// Mallocs is the process's heap allocations so far
	// (runtime.MemStats.Mallocs, tiny allocations included, as
	// testing.AllocsPerRun counts them); the controller divides the
	// measured phase's delta by its operations.
	Mallocs uint64 `json:"mallocs"`
	Note    string `json:"note,omitempty"`
}

// ProfileArg names the CPU profile file to write.
type ProfileArg struct {
	Path string `json:"path"`
}

// RawConfig configures the raw-TCP roles.
type RawConfig struct {
	Peer       string `json:"peer,omitempty"` // sender: the receiver's address
	Conns      int    `json:"conns"`
	FrameBytes int    `json:"frame_bytes"`
	Frames     int    `json:"frames"`      // per connection
	WriteBytes int    `json:"write_bytes"` // bytes per write call (a multiple of the frame size, at least one frame)
	// Ping-pong roles: round trips measured, after WarmupRTTs unmeasured.
	RTTs       int `json:"rtts,omitempty"`
	WarmupRTTs int `json:"warmup_rtts,omitempty"`
}
