// lumber-client: sends numbered events to a Lumberjack v2 server (sluice's beats input) with
// Elastic's go-lumber client, the library inside libbeat's Logstash output, and resends a
// window until it is acknowledged, reconnecting as Filebeat does. The tests of
// tests/beats.rs drive it; it is not part of sluice.
//
// Usage: lumber-client -addr 127.0.0.1:5044 -n 10000 -window 2048 [-compress 3]
//
//	[-conns 4] [-tls -ca ca.pem [-cert c.pem -key k.pem]] [-retry 60s] [-prefix x] [-encoded]
//
// -encoded writes each event's JSON once, by hand, and gives go-lumber an encoder that passes
// the bytes through, as libbeat does with its own encoder (go-structform) instead of
// encoding/json's reflection: the same bytes on the wire at a fraction of the client's CPU,
// which matters when the benchmark's client shares the machine with the server.
//
// Each event is {"message": "<prefix> <i>", "n": i, "@metadata": {"beat": "lumbertest", ...}}.
// On success it prints "acked <n>" and exits 0.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	v2 "github.com/elastic/go-lumber/client/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5044", "server address")
	n := flag.Int("n", 1000, "events to send (split between connections)")
	window := flag.Int("window", 1024, "events per window")
	compress := flag.Int("compress", 0, "zlib level, 0 = no compression")
	conns := flag.Int("conns", 1, "connections sending at once")
	useTLS := flag.Bool("tls", false, "use TLS")
	ca := flag.String("ca", "", "PEM authorities to trust (with -tls)")
	cert := flag.String("cert", "", "PEM client certificate (with -tls)")
	key := flag.String("key", "", "PEM client key (with -tls)")
	retry := flag.Duration("retry", 60*time.Second, "how long to keep retrying a window")
	prefix := flag.String("prefix", "event", "message prefix")
	timeout := flag.Duration("timeout", 30*time.Second, "read/write timeout")
	pad := flag.Int("pad", 0, "bytes of padding in each message")
	encoded := flag.Bool("encoded", false, "encode events by hand and pass the bytes through")
	flag.Parse()

	var tlsConfig *tls.Config
	if *useTLS {
		tlsConfig = &tls.Config{}
		if *ca != "" {
			pem, err := os.ReadFile(*ca)
			if err != nil {
				fail("reading -ca: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				fail("-ca %s: no certificate", *ca)
			}
			tlsConfig.RootCAs = pool
		}
		if *cert != "" {
			pair, err := tls.LoadX509KeyPair(*cert, *key)
			if err != nil {
				fail("loading -cert/-key: %v", err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
		host, _, _ := net.SplitHostPort(*addr)
		tlsConfig.ServerName = host
	}
	padding := make([]byte, *pad)
	for i := range padding {
		padding[i] = 'x'
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	per := (*n + *conns - 1) / *conns
	for c := 0; c < *conns; c++ {
		first, last := c*per, (c+1)*per
		if last > *n {
			last = *n
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := send(*addr, tlsConfig, first, last, *window, *compress, *timeout, *retry, *prefix, string(padding), *encoded)
			mu.Lock()
			acked += got
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("acked %d\n", acked)
	if acked != *n {
		os.Exit(1)
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "lumber-client: "+format+"\n", args...)
	os.Exit(2)
}

func dial(addr string, tlsConfig *tls.Config, compress int, timeout time.Duration, encoded bool) (*v2.SyncClient, error) {
	opts := []v2.Option{v2.Timeout(timeout), v2.CompressionLevel(compress)}
	if encoded {
		opts = append(opts, v2.JSONEncoder(func(v interface{}) ([]byte, error) { return v.([]byte), nil }))
	}
	if tlsConfig == nil {
		return v2.SyncDial(addr, opts...)
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: tlsConfig}
	return v2.SyncDialWith(d.Dial, addr, opts...)
}

// send sends events [first, last) in windows, each resent until acknowledged (a new
// connection after an error), and returns how many were acknowledged.
func send(addr string, tlsConfig *tls.Config, first, last, window, compress int, timeout, retry time.Duration, prefix, pad string, encoded bool) int {
	var cl *v2.SyncClient
	acked := 0
	for start := first; start < last; start += window {
		end := start + window
		if end > last {
			end = last
		}
		batch := make([]interface{}, 0, end-start)
		for i := start; i < end; i++ {
			if encoded {
				message, _ := json.Marshal(fmt.Sprintf("%s %d%s", prefix, i, pad))
				batch = append(batch, []byte(fmt.Sprintf(`{"@metadata":{"beat":"lumbertest","type":"_doc","version":"8.15.0"},"message":%s,"n":%d}`, message, i)))
				continue
			}
			batch = append(batch, map[string]interface{}{
				"message":   fmt.Sprintf("%s %d%s", prefix, i, pad),
				"n":         i,
				"@metadata": map[string]interface{}{"beat": "lumbertest", "type": "_doc", "version": "8.15.0"},
			})
		}
		deadline := time.Now().Add(retry)
		for {
			var err error
			if cl == nil {
				cl, err = dial(addr, tlsConfig, compress, timeout, encoded)
			}
			if err == nil {
				var got int
				got, err = cl.Send(batch)
				if err == nil && got == len(batch) {
					acked += got
					break
				}
				if err == nil {
					err = fmt.Errorf("acknowledged %d of %d", got, len(batch))
				}
				cl.Close()
				cl = nil
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "lumber-client: giving up on events %d-%d: %v\n", start, end-1, err)
				return acked
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if cl != nil {
		cl.Close()
	}
	return acked
}
