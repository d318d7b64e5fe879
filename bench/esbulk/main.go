// esbulk: the node's own ceiling for bench/elasticsearch.sh. It builds every _bulk body
// before the clock starts (documents shaped like the generator's events, `batch` per request,
// gzipped at level 1 like the output's default compression_level), then posts them from
// `conc` goroutines over keep-alive connections and prints the documents per second.
//
// Usage: esbulk URL INDEX DOCS BATCH CONC MESSAGE
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: esbulk URL INDEX DOCS BATCH CONC MESSAGE")
		os.Exit(2)
	}
	url, index, message := os.Args[1], os.Args[2], os.Args[6]
	docs, _ := strconv.Atoi(os.Args[3])
	batch, _ := strconv.Atoi(os.Args[4])
	conc, _ := strconv.Atoi(os.Args[5])
	host, _ := os.Hostname()

	action, _ := json.Marshal(map[string]map[string]string{"index": {"_index": index}})
	var bodies [][]byte
	for start := 0; start < docs; start += batch {
		var raw bytes.Buffer
		for i := start; i < start+batch && i < docs; i++ {
			doc, _ := json.Marshal(map[string]any{
				"@timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
				"@version":   "1",
				"event":      map[string]any{"original": message, "sequence": i},
				"host":       map[string]any{"name": host},
				"message":    message,
			})
			raw.Write(action)
			raw.WriteByte('\n')
			raw.Write(doc)
			raw.WriteByte('\n')
		}
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, 1)
		w.Write(raw.Bytes())
		w.Close()
		bodies = append(bodies, gz.Bytes())
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	next := make(chan []byte, len(bodies))
	for _, b := range bodies {
		next <- b
	}
	close(next)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	start := time.Now()
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				for {
					req, _ := http.NewRequest("POST", url+"/_bulk?filter_path=errors,items.*.error,items.*.status", bytes.NewReader(b))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Content-Encoding", "gzip")
					resp, err := client.Do(req)
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 429 {
						continue
					}
					if resp.StatusCode != 200 || bytes.Contains(body, []byte(`"errors":true`)) {
						mu.Lock()
						failed = fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
						mu.Unlock()
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if failed != nil {
		fmt.Fprintln(os.Stderr, "esbulk:", failed)
		os.Exit(1)
	}
	fmt.Printf("%.0f\n", float64(docs)/elapsed)
}
