// Command nfdelay adds a fixed latency to the packets that iptables sends to one NFQUEUE
// queue: it holds each packet for --delay and then accepts it, in the order the packets
// arrived. It is the latency injector of the e2e tests (hack/latency.sh), for kernels
// without sch_netem. See README.md.
//
//	nfdelay --queue 4231 --delay 200ms --for 10m [--pid-file FILE]
//
// It stops by itself after --for, and on SIGTERM or SIGINT. On the way out it accepts every
// packet it still holds at once, unbinds the queue and prints a one-line summary.
//
// The NFQUEUE protocol (nfnetlink subsystem 3) is spoken directly over a netlink socket of
// github.com/mdlayher/netlink. Packets are released with batch verdicts: one message accepts
// every queued packet up to an id, so a verdict that is lost (or a packet notification the
// socket dropped on overrun) is made good by the next one.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Values of include/uapi/linux/netfilter/nfnetlink.h and nfnetlink_queue.h.
const (
	nfnlSubsysQueue = 3

	nfqnlMsgPacket       = 0
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaCfgQueueMaxln = 3
	nfqaCfgMask       = 4
	nfqaCfgFlags      = 5

	nfqnlCfgCmdBind   = 1
	nfqnlCfgCmdUnbind = 2

	nfqnlCopyMeta = 1

	// Accept packets when the queue is full instead of dropping them.
	nfqaCfgFFailOpen = 1 << 0
	// Queue GSO packets whole instead of segmenting them first (we never touch payloads).
	nfqaCfgFGSO = 1 << 2

	nfAccept = 1
)

var (
	typePacket = netlink.HeaderType(nfnlSubsysQueue<<8 | nfqnlMsgPacket)
	typeConfig = netlink.HeaderType(nfnlSubsysQueue<<8 | nfqnlMsgConfig)
	typeBatch  = netlink.HeaderType(nfnlSubsysQueue<<8 | nfqnlMsgVerdictBatch)
)

type options struct {
	queue   uint16
	delay   time.Duration
	limit   time.Duration
	maxLen  uint32
	rcvBuf  int
	pidFile string
}

func main() {
	var o options
	queue := flag.Uint("queue", 0, "NFQUEUE queue number to bind (0-65535)")
	flag.DurationVar(&o.delay, "delay", 0, "how long to hold each packet, e.g. 200ms (required)")
	flag.DurationVar(&o.limit, "for", 0, "stop by itself after this long, e.g. 10m (required)")
	maxLen := flag.Uint("max-len", 65536, "kernel queue length; when full, packets pass undelayed")
	flag.IntVar(&o.rcvBuf, "rcvbuf", 16<<20, "netlink socket receive buffer, bytes")
	flag.StringVar(&o.pidFile, "pid-file", "", "write the process id here once the queue is bound")
	flag.Parse()
	switch {
	case flag.NArg() != 0:
		usage("unexpected arguments %q", flag.Args())
	case *queue > 65535:
		usage("--queue %d out of range", *queue)
	case o.delay <= 0 || o.delay > time.Minute:
		usage("--delay must be set, above 0 and at most 1m")
	case o.limit <= 0:
		usage("--for must be set and above 0")
	case *maxLen == 0 || *maxLen > 1<<24:
		usage("--max-len must be between 1 and %d", 1<<24)
	}
	o.queue, o.maxLen = uint16(*queue), uint32(*maxLen)
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "nfdelay: %v\n", err)
		os.Exit(1)
	}
}

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "nfdelay: "+format+"\n", args...)
	flag.Usage()
	os.Exit(2)
}

// pending is a packet held in the kernel's queue, to be accepted at due.
type pending struct {
	id  uint32
	due time.Time
}

// delayer holds the packet ids in arrival order. The delay is the same for every packet, so
// arrival order is also the order in which they fall due.
type delayer struct {
	conn  *netlink.Conn
	queue uint16
	delay time.Duration

	mu          sync.Mutex
	held        []pending // held[head:] are waiting
	head        int
	passthrough bool // stopping: accept each new packet at once
	wake        chan struct{}

	delayed       atomic.Uint64 // accepted after the full delay
	early         atomic.Uint64 // accepted early because we were stopping
	peak          atomic.Int64  // most packets held at once
	verdictErrors atomic.Uint64 // error replies from the kernel to our verdicts
	overruns      atomic.Uint64 // socket receive buffer overruns (notifications lost)
}

// add records a newly queued packet. In passthrough mode it accepts it at once instead.
func (d *delayer) add(id uint32, now time.Time) {
	d.mu.Lock()
	if d.passthrough {
		d.mu.Unlock()
		d.accept(id)
		d.early.Add(1)
		return
	}
	d.held = append(d.held, pending{id: id, due: now.Add(d.delay)})
	n := int64(len(d.held) - d.head)
	d.mu.Unlock()
	if n > d.peak.Load() {
		d.peak.Store(n) // only the reader goroutine stores
	}
	if n == 1 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// takeDue removes the packets due at now; it returns the last one's id, how many there
// were, and when the next one falls due (zero if none is held).
func (d *delayer) takeDue(now time.Time) (last uint32, n int, next time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.head < len(d.held) && !d.held[d.head].due.After(now) {
		last = d.held[d.head].id
		d.head++
		n++
	}
	if d.head == len(d.held) {
		d.held, d.head = d.held[:0], 0
	} else {
		if d.head > 4096 && d.head > len(d.held)/2 {
			d.held = append(d.held[:0], d.held[d.head:]...)
			d.head = 0
		}
		next = d.held[d.head].due
	}
	return last, n, next
}

// release accepts packets as they fall due until stop is closed.
func (d *delayer) release(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		last, n, next := d.takeDue(time.Now())
		if n > 0 {
			d.accept(last)
			d.delayed.Add(uint64(n))
		}
		var fire <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			fire = timer.C
		}
		select {
		case <-stop:
			timer.Stop()
			return
		case <-d.wake:
			timer.Stop()
		case <-fire:
		}
	}
}

// passThrough switches to accepting packets at once and accepts every packet still held.
// Called after release has returned.
func (d *delayer) passThrough() {
	d.mu.Lock()
	d.passthrough = true
	held := d.held[d.head:]
	d.held, d.head = nil, 0
	d.mu.Unlock()
	if len(held) > 0 {
		d.accept(held[len(held)-1].id)
		d.early.Add(uint64(len(held)))
	}
}

// accept issues a batch verdict: accept every queued packet whose id is up to id.
func (d *delayer) accept(id uint32) {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[0:4], nfAccept)
	binary.BigEndian.PutUint32(hdr[4:8], id)
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(nfqaVerdictHdr, hdr[:])
	if _, err := d.conn.Send(message(typeBatch, d.queue, ae)); err != nil {
		d.verdictErrors.Add(1)
		fmt.Fprintf(os.Stderr, "nfdelay: verdict: %v\n", err)
	}
}

// message builds an nfnetlink message: struct nfgenmsg (family, version, queue number in
// network byte order) followed by the attributes.
func message(typ netlink.HeaderType, queue uint16, ae *netlink.AttributeEncoder) netlink.Message {
	attrs, err := ae.Encode()
	if err != nil {
		panic(err) // only fixed-size attributes are encoded
	}
	data := make([]byte, 4, 4+len(attrs))
	data[0] = unix.AF_UNSPEC
	data[1] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(data[2:4], queue)
	return netlink.Message{
		Header: netlink.Header{Type: typ, Flags: netlink.Request},
		Data:   append(data, attrs...),
	}
}

func configCmd(cmd uint8) []byte {
	// struct nfqnl_msg_config_cmd: command, pad, pf (unused since Linux 3.8).
	return []byte{cmd, 0, 0, 0}
}

// packetID returns the id of a packet notification.
func packetID(m netlink.Message) (uint32, bool) {
	if m.Header.Type != typePacket || len(m.Data) < 4 {
		return 0, false
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return 0, false
	}
	for ad.Next() {
		if ad.Type() == nfqaPacketHdr {
			// struct nfqnl_msg_packet_hdr: packet_id, hw_protocol, hook.
			if b := ad.Bytes(); len(b) >= 4 {
				return binary.BigEndian.Uint32(b[:4]), true
			}
		}
	}
	return 0, false
}

func run(o options) error {
	start := time.Now()
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer conn.Close()
	if err := setReadBuffer(conn, o.rcvBuf); err != nil {
		return err
	}
	d := &delayer{conn: conn, queue: o.queue, delay: o.delay, wake: make(chan struct{}, 1)}

	if err := d.bind(o.maxLen); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "nfdelay: bound queue %d: delay %s, stopping after %s\n", o.queue, o.delay, o.limit)
	if o.pidFile != "" {
		if err := writePidFile(o.pidFile); err != nil {
			return err
		}
		defer removePidFile(o.pidFile)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	limit := time.NewTimer(o.limit)
	stopRelease := make(chan struct{})
	released := make(chan struct{})
	go func() { d.release(stopRelease); close(released) }()
	var stopping atomic.Bool
	readErr := make(chan error, 1)
	readDone := make(chan struct{})
	go func() { readErr <- d.read(&stopping); close(readDone) }()

	var reason string
	var fatal error
	select {
	case s := <-sigs:
		reason = "signal " + s.String()
	case <-limit.C:
		reason = "time limit " + o.limit.String()
	case fatal = <-readErr:
		reason = "error"
	}
	signal.Stop(sigs)
	// Accept everything still held, and whatever arrives until the queue is unbound.
	close(stopRelease)
	<-released
	d.passThrough()
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(nfqaCfgCmd, configCmd(nfqnlCfgCmdUnbind))
	if _, err := conn.Send(message(typeConfig, o.queue, ae)); err != nil {
		fmt.Fprintf(os.Stderr, "nfdelay: unbind queue %d: %v\n", o.queue, err)
	}
	stopping.Store(true)
	_ = conn.SetReadDeadline(time.Now())
	if fatal == nil {
		<-readDone
	}
	fmt.Printf("nfdelay: queue %d: delayed %d packets by %s (peak %d held, %d accepted early at exit, %d verdict errors, %d receive overruns) in %s; stopped by %s\n",
		o.queue, d.delayed.Load(), o.delay, d.peak.Load(), d.early.Load(), d.verdictErrors.Load(),
		d.overruns.Load(), time.Since(start).Round(time.Millisecond), reason)
	return fatal
}

// bind binds the queue and configures it in one message: metadata only (no payload), the
// queue length, and fail-open (a full queue accepts rather than drops). It waits for the
// kernel's answer; packets queued meanwhile are held as usual.
func (d *delayer) bind(maxLen uint32) error {
	var params [5]byte // struct nfqnl_msg_config_params (packed): copy_range, copy_mode
	params[4] = nfqnlCopyMeta
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	ae.Bytes(nfqaCfgCmd, configCmd(nfqnlCfgCmdBind))
	ae.Bytes(nfqaCfgParams, params[:])
	ae.Uint32(nfqaCfgQueueMaxln, maxLen)
	ae.Uint32(nfqaCfgFlags, nfqaCfgFFailOpen|nfqaCfgFGSO)
	ae.Uint32(nfqaCfgMask, nfqaCfgFFailOpen|nfqaCfgFGSO)
	bind := message(typeConfig, d.queue, ae)
	bind.Header.Flags |= netlink.Acknowledge
	bind, err := d.conn.Send(bind)
	if err != nil {
		return fmt.Errorf("bind queue %d: %w", d.queue, err)
	}
	for bound := false; !bound; {
		msgs, err := d.conn.Receive()
		if err != nil {
			var oe *netlink.OpError
			if errors.As(err, &oe) && oe.Sequence == bind.Header.Sequence {
				if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EBUSY) {
					return fmt.Errorf("bind queue %d: held by another program, or not root: %w", d.queue, err)
				}
				return fmt.Errorf("bind queue %d: %w", d.queue, err)
			}
			return fmt.Errorf("bind queue %d: receive: %w", d.queue, err)
		}
		for _, m := range msgs {
			if id, ok := packetID(m); ok { // queued between the bind and its answer
				d.add(id, time.Now())
			} else if m.Header.Type == netlink.Error && m.Header.Sequence == bind.Header.Sequence {
				bound = true
			}
		}
	}
	return nil
}

// read receives packet notifications until stopping is set (and the read deadline hit) or
// the socket fails for good. It never blocks on anything but the socket.
func (d *delayer) read(stopping *atomic.Bool) error {
	failures := 0
	for {
		msgs, err := d.conn.Receive()
		if err != nil {
			if stopping.Load() {
				return nil
			}
			var oe *netlink.OpError
			switch {
			case errors.Is(err, unix.ENOBUFS):
				// Notifications were lost; their packets are accepted by the next batch
				// verdict, early.
				d.overruns.Add(1)
				continue
			case errors.As(err, &oe) && oe.Sequence != 0:
				// The kernel's answer to a verdict, e.g. ENOENT when the packets were
				// already gone (their interface was deleted).
				if d.verdictErrors.Add(1) <= 10 {
					fmt.Fprintf(os.Stderr, "nfdelay: verdict: %v\n", err)
				}
				continue
			}
			if failures++; failures >= 100 {
				return fmt.Errorf("receive: %w", err)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		failures = 0
		now := time.Now()
		for _, m := range msgs {
			if id, ok := packetID(m); ok {
				d.add(id, now)
			}
		}
	}
}

// setReadBuffer makes the socket's receive buffer large enough for many notifications in
// flight, above net.core.rmem_max where allowed (root).
func setReadBuffer(conn *netlink.Conn, size int) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size)
	}); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	if serr != nil {
		if err := conn.SetReadBuffer(size); err != nil {
			return fmt.Errorf("netlink: receive buffer: %w", err)
		}
	}
	return nil
}

func writePidFile(path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}

func removePidFile(path string) {
	if b, err := os.ReadFile(path); err == nil && string(b) == strconv.Itoa(os.Getpid())+"\n" {
		_ = os.Remove(path)
	}
}
