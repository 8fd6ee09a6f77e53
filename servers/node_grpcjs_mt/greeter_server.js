'use strict';
// The @grpc/grpc-js server of the benchmark on several processes: the same
// server as node_grpcjs_st (after grpc-node's helloworld
// dynamic_codegen/greeter_server.js), started in each worker of a node:cluster
// primary, as Node's cluster documentation shares one port between workers.
// The primary accepts connections and hands them to the workers in turn.

const cluster = require('node:cluster');
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

function primary() {
  const workers = workerCount();
  console.log(`grpcbench-server: workers=${workers}`);
  console.log(`primary ${process.pid}: forking ${workers} worker(s)`);
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
  server.bindAsync(ADDRESS, grpc.ServerCredentials.createInsecure(), (err, port) => {
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
