package io.grpcbench.helloworld

import helloworld.helloworld.{ HelloReply, HelloRequest, RepliesRequest }
import helloworld.helloworld.ZioHelloworld.{ Greeter, StreamingGreeter }
import io.grpc.{ Grpc, ServerBuilder, StatusException, TlsServerCredentials }
import io.grpc.protobuf.services.ProtoReflectionService
import scalapb.zio_grpc.{ Server, ServerLayer, ServerMain, ServiceList }
import zio._
import zio.stream.{ Stream, ZStream }

import java.io.File

/** Implements the SayHello RPC: the inner message, unchanged. */
object GreeterImpl extends Greeter {
  def sayHello(request: HelloRequest): IO[StatusException, HelloReply] =
    ZIO.succeed(HelloReply(response = request.request))
}

/** The streaming RPCs, as zio-grpc's route guide example: a `ZStream` in, a `ZStream` out. */
object StreamingGreeterImpl extends StreamingGreeter {
  def pingPong(request: Stream[StatusException, HelloRequest]): Stream[StatusException, HelloReply] =
    request.map(req => HelloReply(response = req.request))

  def serverStream(request: RepliesRequest): Stream[StatusException, HelloReply] =
    ZStream.succeed(HelloReply(response = request.request)).forever.take(request.replies.toLong)

  def clientStream(request: Stream[StatusException, HelloRequest]): IO[StatusException, HelloReply] =
    request.runLast.map(last => HelloReply(response = last.flatMap(_.request)))
}

/**
 * The zio-grpc server of the benchmark, after zio-grpc's helloworld example: ServerMain binds the
 * services with grpc-java's ServerBuilder and runs them on ZIO's default runtime, whose scheduler
 * has one worker per processor the JVM sees (the entrypoint sets that count).
 */
object GreeterServer extends ServerMain {
  override def port: Int = 50051

  /**
   * ServerMain's server, on grpc-java's TLS credentials from the PEM files when GRPC_TLS_CERT and
   * GRPC_TLS_KEY are set (the entrypoint refuses one without the other), reflection added as
   * ServerMain's own builder does; ServerMain's builder as it is otherwise.
   */
  override def serverLive: ZLayer[Any, Throwable, Server] =
    (sys.env.get("GRPC_TLS_CERT").filter(_.nonEmpty), sys.env.get("GRPC_TLS_KEY").filter(_.nonEmpty)) match {
      case (Some(cert), Some(key)) =>
        // Scala sees the builder's self type as Object, so no chaining: the builder is mutable.
        val tls: ServerBuilder[_] =
          Grpc.newServerBuilderForPort(port, TlsServerCredentials.create(new File(cert), new File(key)))
        tls.addService(ProtoReflectionService.newInstance())
        ServerLayer.fromServiceList(tls, services)
      case _ => super.serverLive
    }

  override def welcome: ZIO[Any, Throwable, Unit] =
    // The start-up line goes to the console as it is: ZIO's logger would
    // wrap it in its key=value format.
    Console.printLine(s"grpcbench-server: workers=${java.lang.Runtime.getRuntime.availableProcessors}") *>
      ZIO.logInfo(s"Server listening on 0.0.0.0:$port")

  def services: ServiceList[Any] = ServiceList.add(GreeterImpl).add(StreamingGreeterImpl)
}
