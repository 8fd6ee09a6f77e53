'use strict';
// The @grpc/grpc-js server of the benchmark on several processes: the same
// server as node_grpcjs_st (after grpc-node's helloworld
// dynamic_codegen/greeter_server.js), started in each worker of a node:cluster
// primary, as Node's cluster documentation shares one port between workers.
// The primary accepts connections and hands them to the workers in turn.
// helloworld.StreamingGreeter's streaming echoes are written after grpc-node's
// route_guide_server.js; plaintext h2c, or TLS when given a certificate.

const cluster = require('node:cluster');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_PATH = path.join(__dirname, 'scenario', 'helloworld.proto');
const ADDRESS = '0.0.0.0:50051';
const GRACE_MS = 5000;

/**
 * Worker processes by the benchmark's rule (docs/adding-a-server.md#workers):
 * GRPC_SERVER_CPUS rounded up, at most the CPUs the process may use, 1 when
 * unset or empty; an invalid value ends the server with status 2.
 */
function workerCount() {
  const raw = process.env.GRPC_SERVER_CPUS;
  if (!raw) return 1;
  const cpus = Number(raw);
  if (!Number.isFinite(cpus) || cpus <= 0) {
    const value = JSON.stringify(raw);
    console.error(`grpcbench-server: GRPC_SERVER_CPUS=${value} is not a positive number`);
    process.exit(2);
  }
  return Math.min(Math.ceil(cpus), os.availableParallelism());
}

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

function primary() {
  const workers = workerCount();
  // Refuse half a TLS setting before any worker starts.
  const files = tlsFiles();
  console.log(`grpcbench-server: workers=${workers}`);
  console.log(`primary ${process.pid}: forking ${workers} worker(s) (TLS: ${files != null})`);
  for (let i = 0; i < workers; i++) cluster.fork();

  let stopping = false;
  // A worker that dies while serving is a failure the benchmark must see.
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`worker ${worker.process.pid} exited (${signal || code})`);
      process.exit(1);
    }
  });
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    console.log(`received ${signal}, stopping workers`);
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function worker() {
  const files = tlsFiles();
  const packageDefinition = protoLoader.loadSync(PROTO_PATH, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const helloProto = grpc.loadPackageDefinition(packageDefinition).helloworld;

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
    console.log(`worker ${process.pid} listening at 0.0.0.0:${port}`);
  });

  const stop = () => {
    // Drain in-flight RPCs, but do not let a stuck client hold the exit.
    const timer = setTimeout(() => {
      server.forceShutdown();
      process.exit(0);
    }, GRACE_MS);
    server.tryShutdown(() => {
      clearTimeout(timer);
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  // Ctrl-C reaches the whole process group; the primary decides.
  process.on('SIGINT', () => {});
}

if (cluster.isPrimary) {
  primary();
} else {
  worker();
}
