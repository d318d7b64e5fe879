// netbench: the clients and ceiling sinks of bench/inputs.sh (standard library only).
//
//	netbench tcpsend ADDR N CONNS      send N JSON lines (~200 bytes) over CONNS connections
//	netbench tcpsink ADDR              accept connections, count bytes until killed
//	netbench lumbersink ADDR           a Lumberjack v2 server that only reads frames and ACKs
//	                                   each window, without inflating or parsing anything
//	netbench udpsend ADDR N            send N datagrams of one JSON line each
//	netbench httpsend URL N CLIENTS BATCH   POST N events as NDJSON bodies of BATCH lines
//	netbench httpsink ADDR             answer every request 200 after reading its body
//	netbench udpsink ADDR              count datagrams; print the count and the seconds from
//	                                   the first to the last once none came for a second
//
// Senders print the seconds they took.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func line(i int) string {
	return fmt.Sprintf(`{"message":"93.180.71.3 - - [17/May/2015:08:05:32 +0000] GET /downloads/product_1 HTTP/1.1 304 0 Debian APT-HTTP","n":%d,"host":"web-01","service":"nginx"}`+"\n", i)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: netbench tcpsend|tcpsink|lumbersink|udpsend|httpsend ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "tcpsend":
		n, _ := strconv.Atoi(os.Args[3])
		conns, _ := strconv.Atoi(os.Args[4])
		tcpsend(os.Args[2], n, conns)
	case "tcpsink":
		tcpsink(os.Args[2])
	case "lumbersink":
		lumbersink(os.Args[2])
	case "udpsend":
		n, _ := strconv.Atoi(os.Args[3])
		udpsend(os.Args[2], n)
	case "udpsink":
		udpsink(os.Args[2])
	case "httpsink":
		http.ListenAndServe(os.Args[2], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Write([]byte("ok"))
		}))
	case "httpsend":
		n, _ := strconv.Atoi(os.Args[3])
		clients, _ := strconv.Atoi(os.Args[4])
		batch, _ := strconv.Atoi(os.Args[5])
		httpsend(os.Args[2], n, clients, batch)
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

func tcpsend(addr string, n, conns int) {
	per := n / conns
	bufs := make([][]byte, conns)
	for c := 0; c < conns; c++ {
		var b bytes.Buffer
		for i := c * per; i < (c+1)*per; i++ {
			b.WriteString(line(i))
		}
		bufs[c] = b.Bytes()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func(b []byte) {
			defer wg.Done()
			s, err := net.Dial("tcp", addr)
			if err != nil {
				panic(err)
			}
			if _, err := s.Write(b); err != nil {
				panic(err)
			}
			s.Close()
		}(bufs[c])
	}
	wg.Wait()
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
}

func tcpsink(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go io.Copy(io.Discard, c)
	}
}

func lumbersink(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			r := bufio.NewReaderSize(c, 1<<20)
			hdr := make([]byte, 10)
			var window uint32
			var got uint32
			ack := func() {
				a := []byte{'2', 'A', 0, 0, 0, 0}
				binary.BigEndian.PutUint32(a[2:], window)
				c.Write(a)
				got = 0
			}
			for {
				if _, err := io.ReadFull(r, hdr[:2]); err != nil {
					return
				}
				switch hdr[1] {
				case 'W':
					io.ReadFull(r, hdr[:4])
					window = binary.BigEndian.Uint32(hdr[:4])
					got = 0
				case 'C':
					io.ReadFull(r, hdr[:4])
					r.Discard(int(binary.BigEndian.Uint32(hdr[:4])))
					ack()
				case 'J':
					io.ReadFull(r, hdr[:8])
					r.Discard(int(binary.BigEndian.Uint32(hdr[4:8])))
					got++
					if got == window {
						ack()
					}
				default:
					return
				}
			}
		}(c)
	}
}

func udpsend(addr string, n int) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		panic(err)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		c.Write([]byte(line(i)))
	}
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
}

func httpsend(url string, n, clients, batch int) {
	bodies := make([][]byte, 0, n/batch)
	for i := 0; i < n; i += batch {
		var b bytes.Buffer
		for j := i; j < i+batch && j < n; j++ {
			b.WriteString(line(j))
		}
		bodies = append(bodies, b.Bytes())
	}
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan []byte, len(bodies))
	for _, b := range bodies {
		next <- b
	}
	close(next)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				for {
					resp, err := client.Post(url, "application/x-ndjson", bytes.NewReader(b))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode < 300 {
							break
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
}

func udpsink(addr string) {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		panic(err)
	}
	if u, ok := c.(*net.UDPConn); ok {
		u.SetReadBuffer(8 << 20)
	}
	buf := make([]byte, 65536)
	n := 0
	var first, last time.Time
	for {
		if n > 0 {
			c.SetReadDeadline(time.Now().Add(time.Second))
		}
		if _, _, err := c.ReadFrom(buf); err != nil {
			break
		}
		if n == 0 {
			first = time.Now()
		}
		last = time.Now()
		n++
	}
	fmt.Printf("%d %.3f\n", n, last.Sub(first).Seconds())
}
