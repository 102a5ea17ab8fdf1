package remote

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// Attacks on the handshake slots by someone without the cookie (issue
// 23, attack 1): many addresses, each under its own cap, hold every slot
// of the node-wide cap with sockets that never finish their hello.

// preauthFlood keeps conns connections open to addr from the addresses
// ips (round robin), each saying hello (nil: nothing) and then nothing
// more; a connection the node closes is dialed again at once, so the
// attacker holds whatever the node lets it hold.
type preauthFlood struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	dials  atomic.Int64
	closed atomic.Int64 // connections the node closed
}

func startPreauthFlood(t *testing.T, addr string, ips []string, conns int, hello []byte) *preauthFlood {
	f := &preauthFlood{stop: make(chan struct{})}
	for i := range conns {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ips[i%len(ips)])}, Timeout: time.Second}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for {
				select {
				case <-f.stop:
					return
				default:
				}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the attacker's pace
					continue
				}
				f.dials.Add(1)
				if hello != nil {
					_, _ = c.Write(hello)
				}
				// Hold it until the node closes it or the test ends.
				done := make(chan struct{})
				go func() {
					var b [64]byte
					for {
						if _, err := c.Read(b[:]); err != nil {
							break
						}
					}
					close(done)
				}()
				select {
				case <-done:
					f.closed.Add(1)
					c.Close()
				case <-f.stop:
					c.Close()
					<-done
					return
				}
			}
		}()
	}
	t.Cleanup(f.halt)
	return f
}

func (f *preauthFlood) halt() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.wg.Wait()
}

// freshHandshakes makes n new handshakes with the cookie from ip, one
// after the other, each as a new node name, and returns how many
// succeeded.
func freshHandshakes(t *testing.T, victim *Node, ip string, n int, tag string) (ok int, errs []error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	for i := range n {
		c, err := d.Dial("tcp", victim.Addr())
		if err == nil {
			h := wire.Hello{Node: fmt.Sprintf("%s-%d", tag, i), Inc: uint64(i + 1), Addr: "127.0.0.1:1"}
			_, err = wire.ClientHandshake(c, []byte(testCookie), h, time.Now().Add(5*time.Second), nil)
			c.Close()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ok++
	}
	return ok, errs
}

// halfHello is the start of a client hello that never ends: its length,
// the magic and the version, and nothing more.
func halfHello() []byte {
	full := wire.ClientHello(&wire.Hello{Node: "half", Inc: 1, Addr: "127.0.0.1:1"})
	b := []byte{byte(len(full) >> 8), byte(len(full))}
	return append(b, full[:8]...)
}

// attackerIPs are ten loopback addresses other than the legitimate
// peer's (127.0.0.1).
func attackerIPs() []string {
	ips := make([]string, 10)
	for i := range ips {
		ips[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	return ips
}

// TestSilentSocketsFromManyAddressesLeaveRoomForNewHandshakes: 400
// connections from 10 addresses (11: the legitimate peer's too) that never send a byte (or send half a
// hello and stall), redialed as soon as the node closes them, under the
// default caps (256 in all, 32 per address, HandshakeTimeout 5 s). The
// legitimate peer, linked before, keeps being served, and its new
// handshakes succeed: at least 95 %. Before: a silent socket kept its
// slot for the whole HandshakeTimeout and a newcomer at the cap was the
// one shed, so the attacker held every slot.
func TestSilentSocketsFromManyAddressesLeaveRoomForNewHandshakes(t *testing.T) {
	for _, c := range []struct {
		name  string
		hello []byte
		ips   []string
	}{
		{"silent", nil, attackerIPs()},
		{"half a hello", halfHello(), attackerIPs()},
		// The attacker also holds sockets from the legitimate peer's own
		// address: its handshake is not the oldest there.
		{"silent, from its address too", nil, append(attackerIPs(), "127.0.0.1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, victim, _ := startNode(t, "victim", Config{})
			good, goodNode, _ := startNode(t, "good", Config{})
			require.NoError(t, goodNode.Connect(t.Context(), "victim", victim.Addr()))
			healthy(t, good, "victim")
			lg := startLegit(t, good, "victim")

			f := startPreauthFlood(t, victim.Addr(), c.ips, 400, c.hello)
			waitFor(t, "the attacker at the cap", func() bool { return victim.Stats().Handshaking >= 250 })
			const tries = 45
			ok, errs := freshHandshakes(t, victim, "127.0.0.1", tries, "fresh")
			st := victim.Stats()
			f.halt()
			calls, p99, worst := lg.check(t)
			t.Logf("%s: %d of %d new handshakes succeeded (%d attacker dials, %d closed by the node, %d shed); in progress at the end %d; the linked peer made %d calls, p99 %v, worst %v",
				c.name, ok, tries, f.dials.Load(), f.closed.Load(), st.HandshakesShed, st.Handshaking, calls, p99, worst)
			if len(errs) > 0 {
				t.Logf("first failure: %v", errs[0])
			}
			require.GreaterOrEqual(t, ok*100, tries*95, "the legitimate peer's new handshakes")
		})
	}
}
