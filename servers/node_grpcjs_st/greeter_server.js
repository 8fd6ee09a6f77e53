'use strict';
// The @grpc/grpc-js server of the benchmark, after grpc-node's helloworld
// dynamic_codegen/greeter_server.js: a unary helloworld.Greeter/SayHello that
// echoes the request's inner message, and helloworld.StreamingGreeter's
// streaming echoes after its route_guide_server.js, on one event loop (a plain
// node process); plaintext h2c, or TLS when given a certificate.

const fs = require('fs');
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

/** PingPong: each request's message back as it comes; OK at the half-close. */
function pingPong(call) {
  call.on('data', (request) => {
    call.write({ response: request.request });
  });
  call.on('end', () => {
    call.end();
  });
}

/** ServerStream: the request's message back `replies` times. */
function serverStream(call) {
  for (let i = 0; i < call.request.replies; i++) {
    call.write({ response: call.request.request });
  }
  call.end();
}

/** ClientStream: the last request's message (an empty reply when none came). */
function clientStream(call, callback) {
  let reply = {};
  call.on('data', (request) => {
    reply = { response: request.request };
  });
  call.on('end', () => {
    callback(null, reply);
  });
}

/**
 * The certificate chain and key files to serve TLS with
 * (docs/adding-a-server.md#tls), or null for plaintext; one set without the
 * other ends the server with status 2.
 */
function tlsFiles() {
  const cert = process.env.GRPC_TLS_CERT || '';
  const key = process.env.GRPC_TLS_KEY || '';
  if (cert && !key) {
    console.error('grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not');
    process.exit(2);
  }
  if (key && !cert) {
    console.error('grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not');
    process.exit(2);
  }
  return cert ? { cert, key } : null;
}

/** The server's credentials: TLS from the given files, or insecure. */
function serverCredentials(files) {
  if (files == null) return grpc.ServerCredentials.createInsecure();
  const keyCertPairs = [
    { cert_chain: fs.readFileSync(files.cert), private_key: fs.readFileSync(files.key) },
  ];
  return grpc.ServerCredentials.createSsl(null, keyCertPairs, false);
}

function main() {
  const files = tlsFiles();
  const server = new grpc.Server();
  server.addService(helloProto.Greeter.service, { sayHello: sayHello });
  server.addService(helloProto.StreamingGreeter.service, {
    pingPong: pingPong,
    serverStream: serverStream,
    clientStream: clientStream,
  });
  server.bindAsync(ADDRESS, serverCredentials(files), (err, port) => {
    if (err != null) {
      console.error(err);
      process.exit(1);
    }
    console.log('grpcbench-server: workers=1 (single-threaded)');
    console.log(`server listening at 0.0.0.0:${port} (TLS: ${files != null})`);
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
