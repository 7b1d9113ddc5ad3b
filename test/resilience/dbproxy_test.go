package resilience

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards loopback connections to a target (PostgreSQL) and can
// cut them all and refuse new ones, as a database that goes away does, or
// freeze them, as a network partition does (bytes are held, connections
// hang), then let them through again.
type tcpProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu       sync.Mutex
	down     bool
	thaw     chan struct{} // non-nil while frozen; closed when restored
	conns    map[net.Conn]struct{}
	accepted int // connections let through
	refused  int // connections refused while down
	wg       sync.WaitGroup
}

func newTCPProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		if p.down {
			p.refused++
			p.mu.Unlock()
			// A reset, as from a host whose database is not listening.
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
			continue
		}
		p.accepted++
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	defer p.wg.Done()
	p.waitThaw() // a partition: the connection hangs before it reaches the target
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		up.Close()
		p.drop(c)
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.waitThaw() // held while frozen, delivered after, as TCP would
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	p.drop(c)
	p.drop(up)
	<-done
}

func (p *tcpProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// cut closes every open connection (both sides) and refuses new ones.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	p.down = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

// freeze stops every byte in both directions, on open connections and new
// ones, without closing anything: clients see their requests hang.
func (p *tcpProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw == nil {
		p.thaw = make(chan struct{})
	}
}

func (p *tcpProxy) waitThaw() {
	p.mu.Lock()
	ch := p.thaw
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// restore lets connections through again (after cut or freeze).
func (p *tcpProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	if p.thaw != nil {
		close(p.thaw)
		p.thaw = nil
	}
}

func (p *tcpProxy) counts() (accepted, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.refused
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.restore()
	p.cut()
	p.wg.Wait()
}

func TestTCPProxyCutsAndRestores(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p := newTCPProxy(t, echo.Addr().String())
	roundTrip := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		if string(b) != "ping" {
			return errors.New("echo answered " + string(b))
		}
		return nil
	}
	c1, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if err := roundTrip(c1); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.cut()
	if err := roundTrip(c1); err == nil {
		t.Error("an open connection still works after the cut")
	}
	if c2, err := net.Dial("tcp", p.addr()); err == nil {
		if roundTrip(c2) == nil {
			t.Error("a new connection works while the proxy is down")
		}
		c2.Close()
	}
	p.restore()
	c3, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3); err != nil {
		t.Errorf("after the restore: %v", err)
	}
	if acc, ref := p.counts(); acc != 2 || ref != 1 {
		t.Errorf("accepted %d, refused %d; want 2 and 1", acc, ref)
	}

	// Frozen: the request hangs; once restored, it goes through.
	p.freeze()
	c3.SetDeadline(time.Now().Add(300 * time.Millisecond))
	c3.Write([]byte("pong"))
	b := make([]byte, 4)
	if _, err := io.ReadFull(c3, b); err == nil {
		t.Error("an answer came through the frozen proxy")
	}
	p.restore()
	c3.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c3, b); err != nil || string(b) != "pong" {
		t.Errorf("after the thaw: %q %v, want the held bytes", b, err)
	}
}
