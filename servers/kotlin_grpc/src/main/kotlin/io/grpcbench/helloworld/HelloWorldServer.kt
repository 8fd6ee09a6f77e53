package io.grpcbench.helloworld

import helloworld.GreeterGrpcKt
import helloworld.Helloworld.HelloReply
import helloworld.Helloworld.HelloRequest
import helloworld.Helloworld.RepliesRequest
import helloworld.StreamingGreeterGrpcKt
import io.grpc.InsecureServerCredentials
import io.grpc.Server
import io.grpc.ServerCredentials
import io.grpc.TlsServerCredentials
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup
import io.grpc.netty.shaded.io.netty.channel.ServerChannel
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel
import java.io.File
import java.net.InetSocketAddress
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import java.util.logging.Logger
import kotlin.coroutines.CoroutineContext
import kotlin.math.ceil
import kotlin.system.exitProcess
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.map

private const val PORT = 50051
private const val GRACE_SECONDS = 5L
private val logger = Logger.getLogger("io.grpcbench.helloworld.HelloWorldServer")

/**
 * Worker threads by the benchmark's rule (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS
 * rounded up, at most the JVM's processor count, 1 when unset or empty; an invalid value ends the
 * server with status 2.
 */
fun threads(): Int {
  val s = System.getenv("GRPC_SERVER_CPUS")
  if (s.isNullOrEmpty()) return 1
  val cpus = s.toDoubleOrNull()
  if (cpus == null || !(cpus > 0) || cpus.isInfinite()) {
    System.err.println("grpcbench-server: GRPC_SERVER_CPUS=\"$s\" is not a positive number")
    exitProcess(2)
  }
  return minOf(ceil(cpus), Runtime.getRuntime().availableProcessors().toDouble()).toInt()
}

/**
 * TLS from the PEM chain and PKCS#8 key named by GRPC_TLS_CERT and GRPC_TLS_KEY
 * (docs/adding-a-server.md#tls), plaintext when neither is set; one without the other ends the
 * server with status 2.
 */
fun credentials(): ServerCredentials {
  val cert = System.getenv("GRPC_TLS_CERT").orEmpty()
  val key = System.getenv("GRPC_TLS_KEY").orEmpty()
  if (cert.isEmpty() != key.isEmpty()) {
    System.err.println(
        if (cert.isEmpty()) "grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not"
        else "grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not")
    exitProcess(2)
  }
  if (cert.isEmpty()) return InsecureServerCredentials.create()
  return TlsServerCredentials.create(File(cert), File(key))
}

/** Implements the SayHello RPC as a suspending function: the inner message, unchanged. */
class GreeterService(context: CoroutineContext) : GreeterGrpcKt.GreeterCoroutineImplBase(context) {
  override suspend fun sayHello(request: HelloRequest): HelloReply =
      HelloReply.newBuilder().setResponse(request.request).build()
}

/** helloworld.StreamingGreeter in grpc-kotlin's route_guide Flow style. */
class StreamingGreeterService(context: CoroutineContext) :
    StreamingGreeterGrpcKt.StreamingGreeterCoroutineImplBase(context) {
  /** A reply echoing each request, as it comes; the flow ends at the client's half-close. */
  override fun pingPong(requests: Flow<HelloRequest>): Flow<HelloReply> =
      requests.map { HelloReply.newBuilder().setResponse(it.request).build() }

  /** `replies` replies echoing the request. */
  override fun serverStream(request: RepliesRequest): Flow<HelloReply> = flow {
    val reply = HelloReply.newBuilder().setResponse(request.request).build()
    repeat(request.replies) { emit(reply) }
  }

  /** The last request's hello (an empty reply when none came), after the client's half-close. */
  override suspend fun clientStream(requests: Flow<HelloRequest>): HelloReply {
    var last: HelloRequest? = null
    requests.collect { last = it }
    val reply = HelloReply.newBuilder()
    last?.takeIf { it.hasRequest() }?.let { reply.setResponse(it.request) }
    return reply.build()
  }
}

/** The grpc-kotlin server of the benchmark, after grpc-kotlin's HelloWorldServer example. */
class HelloWorldServer(private val threads: Int, private val credentials: ServerCredentials) {
  // One fixed pool of the CPU quota runs both grpc-java's call callbacks and the coroutines
  // (without a context the stubs would run them on Dispatchers.Default, sized by the JVM).
  private val executor: ExecutorService = Executors.newFixedThreadPool(threads)
  private val bossGroup: EventLoopGroup
  private val workerGroup: EventLoopGroup
  private val server: Server

  init {
    // Netty worker event loops sized to the CPU quota too; one boss loop accepts connections.
    // Epoll (bundled in grpc-netty-shaded) when available.
    val channelType: Class<out ServerChannel>
    if (Epoll.isAvailable()) {
      bossGroup = EpollEventLoopGroup(1)
      workerGroup = EpollEventLoopGroup(threads)
      channelType = EpollServerSocketChannel::class.java
    } else {
      bossGroup = NioEventLoopGroup(1)
      workerGroup = NioEventLoopGroup(threads)
      channelType = NioServerSocketChannel::class.java
    }
    val dispatcher = executor.asCoroutineDispatcher()
    server =
        NettyServerBuilder.forAddress(InetSocketAddress("0.0.0.0", PORT), credentials)
            .bossEventLoopGroup(bossGroup)
            .workerEventLoopGroup(workerGroup)
            .channelType(channelType)
            .executor(executor)
            .addService(GreeterService(dispatcher))
            .addService(StreamingGreeterService(dispatcher))
            .build()
  }

  fun start() {
    server.start()
    logger.info("grpcbench-server: workers=$threads")
    logger.info(
        "Server started, listening on 0.0.0.0:$PORT${if (credentials is TlsServerCredentials) " with TLS" else ""} (executor, coroutine dispatcher and worker event loop threads: $threads)")
    Runtime.getRuntime()
        .addShutdownHook(
            Thread {
              // stderr: the logger may already have been reset by its own shutdown hook.
              System.err.println("*** shutting down gRPC server since JVM is shutting down")
              stop()
              System.err.println("*** server shut down")
            })
  }

  private fun stop() {
    // Drain in-flight RPCs, but do not let a stuck client hold the exit.
    if (!server.shutdown().awaitTermination(GRACE_SECONDS, TimeUnit.SECONDS)) {
      server.shutdownNow().awaitTermination(GRACE_SECONDS, TimeUnit.SECONDS)
    }
    executor.shutdown()
    bossGroup.shutdownGracefully(0, GRACE_SECONDS, TimeUnit.SECONDS)
    workerGroup.shutdownGracefully(0, GRACE_SECONDS, TimeUnit.SECONDS).await(GRACE_SECONDS, TimeUnit.SECONDS)
  }

  /** grpc-java's threads are daemons: the main thread waits for the server. */
  fun blockUntilShutdown() {
    server.awaitTermination()
  }
}

fun main() {
  val credentials = credentials()
  val server = HelloWorldServer(threads(), credentials)
  server.start()
  server.blockUntilShutdown()
}
