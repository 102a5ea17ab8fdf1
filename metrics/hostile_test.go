package metrics

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// TestANodeNameThatIsNotUTF8DoesNotBreakTheScrape: a cookie holder says
// hello as "mallory\xff\xfe" (and as names too long or with other
// characters) while a legitimate peer is linked. Every scrape answers
// 200, during and after. Before, any bytes were admitted as a node name,
// and a label that is not valid UTF-8 made every scrape answer 500 until
// that incarnation was gone.
func TestANodeNameThatIsNotUTF8DoesNotBreakTheScrape(t *testing.T) {
	b := startNode(t, "b")
	a := startNode(t, "a", "b="+b.n.Addr())
	reg := prometheus.NewRegistry()
	require.NoError(t, Register(reg, a.n))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	require.NoError(t, a.n.Connect(ctxT(t), "b", ""))
	scrape(t, srv.URL)

	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	refused := 0
	for i, name := range []string{"mallory\xff\xfe", "mallory with spaces", string(make([]byte, 300)), "ünï"} {
		conn, err := net.Dial("tcp", a.n.Addr())
		require.NoError(t, err)
		held = append(held, conn)
		_, err = wire.ClientHandshake(conn, []byte(testnode.DefaultCookie), wire.Hello{Node: name, Inc: uint64(i + 1), Addr: "127.0.0.1:1"}, time.Now().Add(5*time.Second), nil)
		if err != nil {
			refused++
			var r *wire.Refusal
			require.ErrorAs(t, err, &r)
			require.Equal(t, wire.CodeBadName, r.Code, "%v", err)
		}
		resp, err := http.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "a scrape with %q saying hello", name)
	}
	require.Equal(t, 4, refused, "every name off the rule is refused at the handshake")
	mfs := scrape(t, srv.URL)
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_remote_links", "peer", "b", "kind", "native", "state", "active"), "the legitimate peer is still linked")
}

// TestALabelThatIsNotUTF8IsMadeValid: a peer name from discovery is not
// checked by the handshake; as a label its invalid bytes become U+FFFD
// rather than fail the scrape.
func TestALabelThatIsNotUTF8IsMadeValid(t *testing.T) {
	d := prometheus.NewDesc("mailroom_test", "A test series.", []string{"peer"}, nil)
	m := constMetric(d, prometheus.GaugeValue, 1, []string{"mallory\xff\xfe"})
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	require.Equal(t, "mallory\uFFFD", out.GetLabel()[0].GetValue())
}
