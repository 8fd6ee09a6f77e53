module github.com/grpcbench/grpcbench/servers/go_vtconnect

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10
	google.golang.org/protobuf v1.36.12
)
