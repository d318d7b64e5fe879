module sluice.bench/esbulk

go 1.21
