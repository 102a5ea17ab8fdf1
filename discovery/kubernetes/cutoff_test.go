package kubernetes_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// A node cut off from the API alone (its peers keep it) is reported down
// by them within its TTL + 1s; back on the API, it renews its lease again
// but is not reported up again (watched for 2 TTLs here; that its tomb
// outlives the view's two-minute tomb time while its lease names it is
// TestViewTombWhileNamed), and the first peer it dials refuses it as
// declared dead, which stops it.
func TestCutOffAlone(t *testing.T) {
	e := newEnv(t)
	w := e.startWatcher("watcher")
	if err := w.sys.Register("whoami", func(context.Context, proto.Message) (proto.Message, error) {
		return wrapperspb.String("watcher"), nil
	}); err != nil {
		t.Fatal(err)
	}
	px := newAPIProxy(t)
	e.pod("x", true)
	c, err := e.childVia("x", px.kubeconfig(t, e.saConfig))
	if err != nil {
		t.Fatal(err)
	}
	id := "x/" + actor.FormatIncarnation(c.inc)
	eventually(t, 20*time.Second, "x up at the watcher", func() bool { m, ok := w.member("x"); return ok && m.Incarnation == c.inc })
	eventually(t, 20*time.Second, "x calls the watcher", func() bool { code, _ := c.get("/call?node=watcher"); return code == http.StatusOK })

	cutAt := time.Now()
	px.cut(true)
	eventually(t, ttl+5*time.Second, "x down at the watcher", func() bool { _, ok := w.downAt(id); return ok })
	at, _ := w.downAt(id)
	t.Logf("x cut off from the API: reported down after %v (TTL %v)", at.Sub(cutAt).Round(time.Millisecond), ttl)
	if took := at.Sub(cutAt); took > ttl+time.Second {
		t.Fatalf("x reported down %v after the cut, want within TTL %v + 1s", took, ttl)
	}

	// Back on the API, x renews its lease again (the watcher sees the
	// renewal), and the watcher never reports it up again.
	px.cut(false)
	before := e.renewTime(t, "x")
	eventually(t, 10*time.Second, "x renewing again", func() bool { return e.renewTime(t, "x").After(before) })
	for end := time.Now().Add(2 * ttl); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m, ok := w.member("x"); ok && m.Incarnation == c.inc {
			t.Fatal("x reported up again after it was reported down")
		}
	}
	// x dials the watcher (unless a link it lost already made it): the
	// watcher refuses it as declared dead, and x stops.
	if code, body := c.get("/call?node=watcher"); code == http.StatusOK {
		t.Fatalf("x called the watcher after it was declared dead: %s", body)
	}
	c.exits(t, 10*time.Second, "x, declared dead by the cluster, stops")
}

// renewTime is the renewal time of node's lease.
func (e *env) renewTime(t *testing.T, node string) time.Time {
	t.Helper()
	l, err := e.admin.CoordinationV1().Leases(e.ns).Get(t.Context(), "mailroom-"+node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		t.Fatalf("lease of %s: %v", node, err)
	}
	return l.Spec.RenewTime.Time
}

// apiProxy forwards TCP to the test apiserver so that a test can cut one
// node off it: while cut, it closes every connection and each new one.
type apiProxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex // protects following
	conns map[net.Conn]bool
	isCut bool
}

func newAPIProxy(t *testing.T) *apiProxy {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{target: u.Host, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut(true)
		p.wg.Wait()
	})
	return p
}

// kubeconfig writes a copy of the kubeconfig at kc that reaches the
// apiserver through the proxy (its certificate names 127.0.0.1, any port).
func (p *apiProxy) kubeconfig(t *testing.T, kc string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.ln.Addr().String()
	}
	path := filepath.Join(t.TempDir(), "proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *apiProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.isCut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *apiProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF, a reset, or closed by cut
			return
		}
	}
}

// cut closes every connection and refuses new ones while on.
func (p *apiProxy) cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = on
	if on {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}
