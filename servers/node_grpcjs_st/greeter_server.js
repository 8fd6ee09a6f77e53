'use strict';
// The @grpc/grpc-js server of the benchmark, after grpc-node's helloworld
// dynamic_codegen/greeter_server.js: a unary helloworld.Greeter/SayHello that
// echoes the request's inner message, on one event loop (a plain node process).

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_PATH = path.join(__dirname, 'scenario', 'helloworld.proto');
const ADDRESS = '0.0.0.0:50051';
const GRACE_MS = 5000;

const packageDefinition = protoLoader.loadSync(PROTO_PATH, {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const helloProto = grpc.loadPackageDefinition(packageDefinition).helloworld;

/** Implements the SayHello RPC method: the inner message, unchanged. */
function sayHello(call, callback) {
  callback(null, { response: call.request.request });
}

function main() {
  const server = new grpc.Server();
  server.addService(helloProto.Greeter.service, { sayHello: sayHello });
  server.bindAsync(ADDRESS, grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err != null) {
      console.error(err);
      process.exit(1);
    }
    console.log('grpcbench-server: workers=1 (single-threaded)');
    console.log(`server listening at 0.0.0.0:${port}`);
  });

  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    console.log(`received ${signal}, stopping`);
    // Drain in-flight RPCs, but do not let a stuck client hold the exit.
    const timer = setTimeout(() => server.forceShutdown(), GRACE_MS);
    server.tryShutdown(() => {
      clearTimeout(timer);
      console.log('server stopped');
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
