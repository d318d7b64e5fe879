// Metricbeat 7.17.29 (Elastic's, unchanged: beats' own metricbeat/cmd), built from the Go
// module proxy for tests/metricbeat.rs, which runs its logstash module (the one Kibana's Stack
// Monitoring reads, with xpack.enabled) against a running sluice. scripts/build-metricbeat
// builds it into ~/.cache/sluice; go.mod repeats beats' replace directives.
package main

import (
	"os"

	"github.com/elastic/beats/v7/metricbeat/cmd"

	// Already in metricbeat/cmd's includes; named so that what the test needs is visible.
	_ "github.com/elastic/beats/v7/libbeat/outputs/fileout"
	_ "github.com/elastic/beats/v7/metricbeat/module/logstash/node"
	_ "github.com/elastic/beats/v7/metricbeat/module/logstash/node_stats"
)

func main() {
	if err := cmd.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
