# The grpc gem (GRPC::RpcServer) server of the benchmark: a unary
# helloworld.Greeter/SayHello that echoes the request's inner message, after
# grpc's Ruby helloworld greeter_server.rb.

lib_dir = File.join(__dir__, 'lib')
$LOAD_PATH.unshift(lib_dir) unless $LOAD_PATH.include?(lib_dir)

require 'grpc'
require 'helloworld_services_pb'

ADDRESS = '0.0.0.0:50051'
# The server answers RESOURCE_EXHAUSTED to any call that finds no idle pool
# thread, so the pool must cover the calls in flight (the benchmark's client
# keeps up to 1000); grpc's own Ruby benchmark server uses 1024 for the same
# reason. The GVL runs one of them at a time whatever GRPC_SERVER_CPUS is.
POOL_SIZE = 1024

class GreeterServer < Helloworld::Greeter::Service
  def say_hello(hello_req, _unused_call)
    Helloworld::HelloReply.new(response: hello_req.request)
  end
end

def main
  server = GRPC::RpcServer.new(pool_size: POOL_SIZE)
  server.add_http2_port(ADDRESS, :this_port_is_insecure)
  server.handle(GreeterServer)
  warn 'grpcbench-server: workers=1 (single-threaded)'
  warn "ruby_grpc listening on #{ADDRESS} (pool_size=#{POOL_SIZE})"
  # Runs until SIGINT or SIGTERM (docker stop), then stops the server.
  server.run_till_terminated_or_interrupted(['INT', 'TERM'])
end

main
