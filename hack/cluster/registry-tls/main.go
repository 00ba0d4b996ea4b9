// Command registry-tls puts a second door on the local cluster's registry: it listens on
// one port (127.0.0.1:5443) and forwards every request to the plain-HTTP registry
// (http://127.0.0.1:5000), speaking TLS to clients that start a TLS handshake and plain
// HTTP to the others. Both doors serve the same content.
//
// Why: `operator-sdk run bundle` pulls the index image on the host with default TLS and
// ignores --use-http and --skip-tls-verify for it, so the image must be reachable over
// TLS with a certificate the host process trusts (SSL_CERT_FILE naming a bundle that
// holds the cluster's registry CA). Containerd may reach the same name over plain HTTP,
// so one name, localhost:5443, works for both the host and the cluster.
//
// It is its own module (stdlib only), like pause, so the operator's module never sees it.
package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// tlsRecordHandshake is the first byte of every TLS connection (a handshake record);
// an HTTP request starts with an ASCII method name instead.
const tlsRecordHandshake = 0x16

func main() {
	listen := flag.String("listen", "127.0.0.1:5443", "address to listen on")
	backend := flag.String("backend", "http://127.0.0.1:5000", "URL of the plain-HTTP registry")
	certFile := flag.String("cert", "", "server certificate (PEM)")
	keyFile := flag.String("key", "", "server private key (PEM)")
	flag.Parse()
	if *certFile == "" || *keyFile == "" {
		log.Fatal("-cert and -key are required")
	}
	target, err := url.Parse(*backend)
	if err != nil || target.Host == "" {
		log.Fatalf("bad -backend %q", *backend)
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("load certificate: %v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s (TLS and plain HTTP) for %s", *listen, target)

	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// Keep the client's Host so anything the registry writes back names this door.
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		ErrorLog: log.New(os.Stderr, "proxy: ", log.LstdFlags),
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 30 * time.Second}
	tlsConfig := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// http.Server.Serve with our own listener does not set up HTTP/2.
		NextProtos: []string{"http/1.1"},
	}
	log.Fatal(srv.Serve(newSniffListener(ln, tlsConfig)))
}

// sniffListener hands out each accepted connection either as is or wrapped in TLS,
// depending on its first byte. Sniffing runs per connection, so a client that connects
// and says nothing holds up no one else.
type sniffListener struct {
	net.Listener
	tls   *tls.Config
	conns chan net.Conn
	errs  chan error
}

func newSniffListener(ln net.Listener, cfg *tls.Config) *sniffListener {
	l := &sniffListener{Listener: ln, tls: cfg, conns: make(chan net.Conn), errs: make(chan error, 1)}
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.errs <- err
			return
		}
		go l.classify(c)
	}
}

func (l *sniffListener) classify(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		_ = c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == tlsRecordHandshake {
		out = tls.Server(out, l.tls)
	}
	l.conns <- out
}

// Accept returns the next classified connection.
func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	}
}

// peekedConn reads through the buffered reader that holds the sniffed byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
