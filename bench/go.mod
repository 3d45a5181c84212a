module github.com/kairos-sh/kairos/bench

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/kairos-sh/kairos v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/kairos-sh/kairos => ../
