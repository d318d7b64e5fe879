// storebench: the baseline clients of bench/datastores.sh, each doing the data-store work a
// sluice plugin does, as directly as its server allows, so that the script can print sluice's
// rate next to the server's ceiling for that work on this machine, in the same run.
//
//	storebench esindex URL INDEX N              bulk-index N small documents (n = 0..N-1)
//	storebench esscroll URL INDEX SIZE          read every document by scroll, pages of SIZE
//	storebench essearch URL INDEX N CONNS       N term queries on n (size 1), CONNS at a time
//	storebench httpsink ADDR                    answer every request 200 with a small JSON body
//	storebench httpget URL N CONNS              N GETs of URL?n=i over CONNS keep-alive clients
//	storebench amqppub AMQPURL EXCHANGE KEY N CONNS
//	                                            publish N persistent JSON messages in batches
//	                                            of 125, each batch confirmed by the broker
//	                                            before the next (as the rabbitmq output does)
//	storebench amqpdeclare AMQPURL NAME         a durable direct exchange NAME and a durable
//	                                            queue NAME bound to it by key "k"
//	storebench amqpget AMQPURL QUEUE N PREFETCH consume N messages, manual acks, one ack per 125
//	storebench sqssend URL QUEUE N              send N messages, 10 per SendMessageBatch
//	storebench sqsrecv URL QUEUE N              receive (10 at a time) and delete N messages
//	storebench memcache ADDR N CONNS            N set+get pairs of one key each
//
// Every command prints the seconds its work took on its last line.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func doc(i int) string {
	return fmt.Sprintf(`{"message":"93.180.71.3 - - [17/May/2015:08:05:32 +0000] GET /downloads/product_1 HTTP/1.1 304 0 Debian APT-HTTP","n":%d,"host":"web-01","service":"nginx"}`, i)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		die(err)
	}
	return n
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "storebench:", err)
	os.Exit(1)
}

// parallel runs f(i) for i in 0..n over conns goroutines, each taking the next i.
func parallel(n, conns int, f func(worker, i int)) {
	var next int64 = -1
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= n {
					return
				}
				f(w, i)
			}
		}(w)
	}
	wg.Wait()
}

func post(c *http.Client, u, ctype string, body []byte) []byte {
	resp, err := c.Post(u, ctype, bytes.NewReader(body))
	if err != nil {
		die(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		die(err)
	}
	if resp.StatusCode >= 300 {
		die(fmt.Errorf("%s: %d %s", u, resp.StatusCode, b))
	}
	return b
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: storebench COMMAND ARGS... (see main.go)")
		os.Exit(2)
	}
	a := os.Args[2:]
	start := time.Now()
	switch os.Args[1] {
	case "esindex":
		esindex(a[0], a[1], atoi(a[2]))
	case "esscroll":
		esscroll(a[0], a[1], atoi(a[2]))
	case "essearch":
		essearch(a[0], a[1], atoi(a[2]), atoi(a[3]))
	case "httpsink":
		http.ListenAndServe(a[0], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true,"n":` + strconv.Quote(r.URL.Query().Get("n")) + `}`))
		}))
	case "httpget":
		httpget(a[0], atoi(a[1]), atoi(a[2]))
	case "amqppub":
		amqppub(a[0], a[1], a[2], atoi(a[3]), atoi(a[4]))
	case "amqpdeclare":
		amqpdeclare(a[0], a[1])
	case "amqpget":
		amqpget(a[0], a[1], atoi(a[2]), atoi(a[3]))
	case "sqssend":
		sqssend(a[0], a[1], atoi(a[2]))
	case "sqsrecv":
		sqsrecv(a[0], a[1], atoi(a[2]))
	case "memcache":
		memcache(a[0], atoi(a[1]), atoi(a[2]))
	default:
		die(fmt.Errorf("unknown command %q", os.Args[1]))
	}
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
}

func esindex(base, index string, n int) {
	c := &http.Client{}
	for from := 0; from < n; from += 5000 {
		var b bytes.Buffer
		for i := from; i < n && i < from+5000; i++ {
			fmt.Fprintf(&b, "{\"index\":{\"_index\":%q,\"_id\":\"%d\"}}\n%s\n", index, i, doc(i))
		}
		out := post(c, base+"/_bulk", "application/x-ndjson", b.Bytes())
		if bytes.Contains(out[:min(len(out), 100)], []byte(`"errors":true`)) {
			die(fmt.Errorf("bulk errors: %.300s", out))
		}
	}
	post(c, base+"/"+index+"/_refresh", "application/json", nil)
}

type hits struct {
	ScrollID string `json:"_scroll_id"`
	Hits     struct {
		Hits []map[string]any `json:"hits"`
	} `json:"hits"`
}

func esscroll(base, index string, size int) {
	c := &http.Client{}
	body := fmt.Sprintf(`{"query":{"match_all":{}},"size":%d,"sort":["_doc"]}`, size)
	out := post(c, base+"/"+index+"/_search?scroll=1m", "application/json", []byte(body))
	total := 0
	for {
		var h hits
		if err := json.Unmarshal(out, &h); err != nil {
			die(err)
		}
		if len(h.Hits.Hits) == 0 {
			break
		}
		total += len(h.Hits.Hits)
		next, _ := json.Marshal(map[string]string{"scroll": "1m", "scroll_id": h.ScrollID})
		out = post(c, base+"/_search/scroll", "application/json", next)
	}
	fmt.Println(total, "documents")
}

func essearch(base, index string, n, conns int) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns}}
	parallel(n, conns, func(_, i int) {
		q := fmt.Sprintf(`{"query":{"term":{"n":%d}},"size":1}`, i)
		out := post(c, base+"/"+index+"/_search", "application/json", []byte(q))
		var h hits
		if err := json.Unmarshal(out, &h); err != nil || len(h.Hits.Hits) != 1 {
			die(fmt.Errorf("query %d: %v %.200s", i, err, out))
		}
	})
}

func httpget(u string, n, conns int) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns}}
	parallel(n, conns, func(_, i int) {
		resp, err := c.Get(u + "?n=" + strconv.Itoa(i))
		if err != nil {
			die(err)
		}
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			die(err)
		}
		resp.Body.Close()
	})
}

func amqppub(u, exchange, key string, n, conns int) {
	batches := (n + 124) / 125
	chans := make([]*amqp.Channel, conns)
	confirms := make([]chan amqp.Confirmation, conns)
	for w := range chans {
		conn, err := amqp.Dial(u)
		if err != nil {
			die(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			die(err)
		}
		if err := ch.Confirm(false); err != nil {
			die(err)
		}
		chans[w] = ch
		confirms[w] = ch.NotifyPublish(make(chan amqp.Confirmation, 256))
	}
	parallel(batches, conns, func(w, b int) {
		sent := 0
		for i := b * 125; i < n && i < (b+1)*125; i++ {
			err := chans[w].Publish(exchange, key, false, false, amqp.Publishing{
				ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: []byte(doc(i)),
			})
			if err != nil {
				die(err)
			}
			sent++
		}
		for ; sent > 0; sent-- {
			if c := <-confirms[w]; !c.Ack {
				die(fmt.Errorf("nacked"))
			}
		}
	})
}

func amqpdeclare(u, name string) {
	conn, err := amqp.Dial(u)
	if err != nil {
		die(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		die(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		die(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		die(err)
	}
	if err := ch.QueueBind(name, "k", name, false, nil); err != nil {
		die(err)
	}
}

func amqpget(u, queue string, n, prefetch int) {
	conn, err := amqp.Dial(u)
	if err != nil {
		die(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		die(err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		die(err)
	}
	msgs, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		die(err)
	}
	for i := 1; i <= n; i++ {
		m := <-msgs
		var v map[string]any
		if err := json.Unmarshal(m.Body, &v); err != nil {
			die(err)
		}
		if i%125 == 0 || i == n {
			if err := m.Ack(true); err != nil {
				die(err)
			}
		}
	}
}

func sqsCall(c *http.Client, base string, form url.Values) []byte {
	return post(c, base, "application/x-www-form-urlencoded", []byte(form.Encode()))
}

func sqsQueueURL(c *http.Client, base, queue string) string {
	out := sqsCall(c, base, url.Values{"Action": {"CreateQueue"}, "QueueName": {queue}})
	var r struct {
		URL string `xml:"CreateQueueResult>QueueUrl"`
	}
	if err := xml.Unmarshal(out, &r); err != nil {
		die(err)
	}
	return r.URL
}

func sqssend(base, queue string, n int) {
	c := &http.Client{}
	q := sqsQueueURL(c, base, queue)
	for from := 0; from < n; from += 10 {
		f := url.Values{"Action": {"SendMessageBatch"}, "QueueUrl": {q}}
		for i := from; i < n && i < from+10; i++ {
			p := fmt.Sprintf("SendMessageBatchRequestEntry.%d.", i-from+1)
			f.Set(p+"Id", strconv.Itoa(i))
			f.Set(p+"MessageBody", doc(i))
		}
		sqsCall(c, base, f)
	}
}

func sqsrecv(base, queue string, n int) {
	c := &http.Client{}
	q := sqsQueueURL(c, base, queue)
	for got := 0; got < n; {
		out := sqsCall(c, base, url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {q},
			"MaxNumberOfMessages": {"10"}, "WaitTimeSeconds": {"1"}})
		var r struct {
			Messages []struct {
				Body    string `xml:"Body"`
				Receipt string `xml:"ReceiptHandle"`
			} `xml:"ReceiveMessageResult>Message"`
		}
		if err := xml.Unmarshal(out, &r); err != nil {
			die(err)
		}
		if len(r.Messages) == 0 {
			continue
		}
		f := url.Values{"Action": {"DeleteMessageBatch"}, "QueueUrl": {q}}
		for i, m := range r.Messages {
			var v map[string]any
			if err := json.Unmarshal([]byte(m.Body), &v); err != nil {
				die(err)
			}
			p := fmt.Sprintf("DeleteMessageBatchRequestEntry.%d.", i+1)
			f.Set(p+"Id", strconv.Itoa(i))
			f.Set(p+"ReceiptHandle", m.Receipt)
		}
		sqsCall(c, base, f)
		got += len(r.Messages)
	}
}

func memcache(addr string, n, conns int) {
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	cs := make([]conn, conns)
	for w := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			die(err)
		}
		cs[w] = conn{c, bufio.NewReader(c)}
	}
	parallel(n, conns, func(w, i int) {
		c := cs[w]
		v := strconv.Itoa(i)
		fmt.Fprintf(c.c, "set k%d 0 0 %d\r\n%s\r\n", i, len(v), v)
		if l, err := c.r.ReadString('\n'); err != nil || l != "STORED\r\n" {
			die(fmt.Errorf("set: %q %v", l, err))
		}
		fmt.Fprintf(c.c, "get k%d\r\n", i)
		for {
			l, err := c.r.ReadString('\n')
			if err != nil {
				die(err)
			}
			if l == "END\r\n" {
				break
			}
			if strings.HasPrefix(l, "VALUE ") {
				if _, err := c.r.ReadString('\n'); err != nil {
					die(err)
				}
			}
		}
	})
}
