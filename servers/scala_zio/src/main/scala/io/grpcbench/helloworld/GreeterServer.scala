package io.grpcbench.helloworld

import helloworld.helloworld.{ HelloReply, HelloRequest }
import helloworld.helloworld.ZioHelloworld.Greeter
import io.grpc.StatusException
import scalapb.zio_grpc.{ ServerMain, ServiceList }
import zio._

/** Implements the SayHello RPC: the inner message, unchanged. */
object GreeterImpl extends Greeter {
  def sayHello(request: HelloRequest): IO[StatusException, HelloReply] =
    ZIO.succeed(HelloReply(response = request.request))
}

/**
 * The zio-grpc server of the benchmark, after zio-grpc's helloworld example: ServerMain binds the
 * services with grpc-java's ServerBuilder and runs them on ZIO's default runtime, whose scheduler
 * has one worker per processor the JVM sees (the entrypoint sets that count).
 */
object GreeterServer extends ServerMain {
  override def port: Int = 50051

  override def welcome: ZIO[Any, Throwable, Unit] =
    // The start-up line goes to the console as it is: ZIO's logger would
    // wrap it in its key=value format.
    Console.printLine(s"grpcbench-server: workers=${java.lang.Runtime.getRuntime.availableProcessors}") *>
      ZIO.logInfo(s"Server listening on 0.0.0.0:$port")

  def services: ServiceList[Any] = ServiceList.add(GreeterImpl)
}
