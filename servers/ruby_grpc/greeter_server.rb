# The grpc gem (GRPC::RpcServer) server of the benchmark: a unary
# helloworld.Greeter/SayHello that echoes the request's inner message, after
# grpc's Ruby helloworld greeter_server.rb, and helloworld.StreamingGreeter's
# streaming echoes, after its route_guide_server.rb; plaintext h2c, or TLS when
# given a certificate.

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

class StreamingGreeterServer < Helloworld::StreamingGreeter::Service
  # The replies are an enumerable the server writes as it takes them: each
  # one as its request comes, until the client half-closes.
  def ping_pong(requests)
    requests.lazy.map { |req| Helloworld::HelloReply.new(response: req.request) }
  end

  def server_stream(req, _unused_call)
    req.replies.times.lazy.map { Helloworld::HelloReply.new(response: req.request) }
  end

  # The last request's message; an empty reply when none came.
  def client_stream(call)
    reply = Helloworld::HelloReply.new
    call.each_remote_read { |req| reply = Helloworld::HelloReply.new(response: req.request) }
    reply
  end
end

# The port's credentials: TLS from GRPC_TLS_CERT and GRPC_TLS_KEY
# (docs/adding-a-server.md#tls), else plaintext; one set without the other
# ends the server with status 2.
def port_credentials
  cert = ENV.fetch('GRPC_TLS_CERT', '')
  key = ENV.fetch('GRPC_TLS_KEY', '')
  if !cert.empty? && key.empty?
    warn 'grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not'
    exit 2
  end
  if cert.empty? && !key.empty?
    warn 'grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not'
    exit 2
  end
  return :this_port_is_insecure if cert.empty?

  key_cert_pairs = [{ private_key: File.read(key), cert_chain: File.read(cert) }]
  GRPC::Core::ServerCredentials.new(nil, key_cert_pairs, false)
end

def main
  credentials = port_credentials
  server = GRPC::RpcServer.new(pool_size: POOL_SIZE)
  server.add_http2_port(ADDRESS, credentials)
  server.handle(GreeterServer)
  server.handle(StreamingGreeterServer)
  warn 'grpcbench-server: workers=1 (single-threaded)'
  tls = credentials != :this_port_is_insecure
  warn "ruby_grpc listening on #{ADDRESS} (pool_size=#{POOL_SIZE}, TLS: #{tls})"
  # Runs until SIGINT or SIGTERM (docker stop), then stops the server.
  server.run_till_terminated_or_interrupted(['INT', 'TERM'])
end

main
