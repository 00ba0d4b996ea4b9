package main

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
)

func TestVerdictMessageLayout(t *testing.T) {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[0:4], nfAccept)
	binary.BigEndian.PutUint32(hdr[4:8], 0x01020304)
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(nfqaVerdictHdr, hdr[:])
	m := message(typeBatch, 4231, ae)
	if m.Header.Type != 0x0303 {
		t.Errorf("type %#x, want 0x0303", m.Header.Type)
	}
	want := []byte{
		0, 0, 0x10, 0x87, // nfgenmsg: AF_UNSPEC, version 0, queue 4231 big-endian
		12, 0, 2, 0, // nlattr: length 12, type NFQA_VERDICT_HDR (native endian, amd64)
		0, 0, 0, 1, // NF_ACCEPT
		1, 2, 3, 4, // packet id
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("layout written for little-endian hosts")
	}
	if !bytes.Equal(m.Data, want) {
		t.Errorf("data % x, want % x", m.Data, want)
	}
}

func TestPacketID(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	// id 12345, IPv4 (0x0800), hook FORWARD
	ae.Bytes(nfqaPacketHdr, []byte{0, 0, 0x30, 0x39, 0x08, 0x00, 2})
	ae.Uint32(5, 7) // NFQA_IFINDEX_INDEV
	attrs, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	m := netlink.Message{Header: netlink.Header{Type: typePacket}, Data: append([]byte{2, 0, 0x10, 0x87}, attrs...)}
	if id, ok := packetID(m); !ok || id != 12345 {
		t.Errorf("packetID = %d, %v; want 12345, true", id, ok)
	}
	m.Header.Type = typeConfig
	if _, ok := packetID(m); ok {
		t.Error("packetID accepted a config message")
	}
}

func TestTakeDueInOrder(t *testing.T) {
	d := &delayer{delay: 100 * time.Millisecond, wake: make(chan struct{}, 1)}
	t0 := time.Now()
	for i := range uint32(5) {
		d.add(10+i, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	if got := d.peak.Load(); got != 5 {
		t.Errorf("peak %d, want 5", got)
	}
	if _, n, next := d.takeDue(t0.Add(99 * time.Millisecond)); n != 0 || !next.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("before the first is due: n=%d next=%v", n, next.Sub(t0))
	}
	last, n, next := d.takeDue(t0.Add(125 * time.Millisecond))
	if last != 12 || n != 3 || !next.Equal(t0.Add(130*time.Millisecond)) {
		t.Fatalf("at 125ms: last=%d n=%d next=%v; want 12, 3, 130ms", last, n, next.Sub(t0))
	}
	last, n, next = d.takeDue(t0.Add(time.Second))
	if last != 14 || n != 2 || !next.IsZero() {
		t.Fatalf("at 1s: last=%d n=%d next=%v; want 14, 2, none", last, n, next)
	}
}
