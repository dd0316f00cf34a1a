package smtp

import (
	"net"
	"sync"
	"time"
)

// limitListener holds a listener to at most max connections at once and each connection to at
// most session of time. A connection over the count is answered 421 4.7.0 and closed at once,
// as Postfix answers a client over its connection limits, so the client tries again later. A
// connection's every read deadline is clamped to the end of its session: go-smtp sets one
// before each command line, so a session at its end reads no more and is answered 421 4.4.2
// (its write deadlines get a few seconds more, for that answer).
type limitListener struct {
	net.Listener
	session time.Duration
	domain  string
	slots   chan struct{}
}

// sessionEndGrace is how long past the end of its session a connection may still write: the
// time for the listener's last answer.
const sessionEndGrace = 5 * time.Second

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			c.SetWriteDeadline(time.Now().Add(sessionEndGrace))
			c.Write([]byte("421 4.7.0 " + l.domain + " Too many connections, try again later\r\n"))
			c.Close()
			continue
		}
		end := time.Now().Add(l.session)
		lc := &limitedConn{Conn: c, end: end, release: func() { <-l.slots }}
		if err := c.SetReadDeadline(end); err != nil {
			lc.Close()
			continue
		}
		return lc, nil
	}
}

// limitedConn is a connection with a session end; closing it frees its slot once.
type limitedConn struct {
	net.Conn
	end     time.Time
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// clamp returns t, or the session's end (plus grace) when t is zero or later than it.
func (c *limitedConn) clamp(t time.Time, grace time.Duration) time.Time {
	end := c.end.Add(grace)
	if t.IsZero() || t.After(end) {
		return end
	}
	return t
}

func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(c.clamp(t, 0)); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(c.clamp(t, sessionEndGrace))
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t, 0))
}

func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t, sessionEndGrace))
}
