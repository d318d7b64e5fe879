module sluice.test/lumber

go 1.21

require github.com/elastic/go-lumber v0.2.0

require github.com/klauspost/compress v1.15.9 // indirect
