module sluice.bench/netbench

go 1.21
