//go:build chaos

package chaos

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// KernelQueues sums, over every TCP socket on this host (IPv4 and IPv6),
// the bytes queued toward the node listening on port: the send queues of
// sockets whose remote port is port (written by a peer, not yet acked by
// the node's kernel) and the receive queues of sockets whose local port
// is port (acked, not yet read by the node). Links dialed by the node
// itself are not counted. It reads /proc/net/tcp{,6}.
func KernelQueues(port int) (toNode int64, err error) {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		n, err := kernelQueues(f, port)
		if err != nil {
			return 0, err
		}
		toNode += n
	}
	return toNode, nil
}

func kernelQueues(path string, port int) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		lport, err1 := hexPort(fields[1])
		rport, err2 := hexPort(fields[2])
		tx, rx, err3 := queues(fields[4])
		if err1 != nil || err2 != nil || err3 != nil {
			return 0, fmt.Errorf("chaos: %s: bad line %q", path, sc.Text())
		}
		if rport == port {
			total += tx
		}
		if lport == port && fields[3] != "0A" { // not the listener
			total += rx
		}
	}
	return total, sc.Err()
}

func hexPort(addr string) (int, error) {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return 0, fmt.Errorf("no port in %q", addr)
	}
	v, err := strconv.ParseUint(p, 16, 16)
	return int(v), err
}

func queues(s string) (tx, rx int64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("bad queues %q", s)
	}
	t, err := strconv.ParseInt(a, 16, 64)
	if err != nil {
		return 0, 0, err
	}
	r, err := strconv.ParseInt(b, 16, 64)
	return t, r, err
}
