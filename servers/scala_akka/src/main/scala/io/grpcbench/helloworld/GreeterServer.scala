package io.grpcbench.helloworld

import com.typesafe.config.{ Config, ConfigFactory }
import helloworld.{ Greeter, GreeterHandler, HelloReply, HelloRequest }
import akka.actor.typed.ActorSystem
import akka.actor.typed.scaladsl.Behaviors
import akka.http.scaladsl.Http
import akka.http.scaladsl.model.{ HttpRequest, HttpResponse }

import scala.concurrent.duration._
import scala.concurrent.{ ExecutionContext, Future }
import scala.util.{ Failure, Success }

/** Implements the SayHello RPC: the inner message, unchanged. */
class GreeterImpl extends Greeter {
  override def sayHello(in: HelloRequest): Future[HelloReply] =
    Future.successful(HelloReply(response = in.request))
}

/** The Akka gRPC server of the benchmark, after Akka gRPC's Scala GreeterServer example. */
object GreeterServer {
  private val Port = 50051

  /**
   * Default dispatcher threads by the benchmark's rule (docs/adding-a-server.md#workers):
   * GRPC_SERVER_CPUS rounded up, at most the JVM's processor count, 1 when unset or empty; an
   * invalid value ends the server with status 2.
   */
  def threads(): Int =
    sys.env.get("GRPC_SERVER_CPUS").filter(_.nonEmpty) match {
      case None => 1
      case Some(s) =>
        s.toDoubleOption.filter(c => c > 0 && !c.isInfinite) match {
          case Some(cpus) =>
            math.min(math.ceil(cpus), Runtime.getRuntime.availableProcessors.toDouble).toInt
          case None =>
            System.err.println(s"""grpcbench-server: GRPC_SERVER_CPUS="$s" is not a positive number""")
            sys.exit(2)
        }
    }

  /**
   * The default dispatcher runs Akka HTTP's streams and the service's futures; its fork-join pool
   * has at least 8 threads by default whatever the CPU count, so pin it to the rule's count.
   */
  def config(): Config = {
    val n = threads()
    ConfigFactory
      .parseString(s"""akka.actor.default-dispatcher.fork-join-executor {
          |  parallelism-min = $n
          |  parallelism-max = $n
          |}""".stripMargin)
      .withFallback(ConfigFactory.defaultApplication())
      .withFallback(ConfigFactory.defaultReference())
  }

  def main(args: Array[String]): Unit = {
    val system = ActorSystem[Nothing](Behaviors.empty[Nothing], "GreeterServer", config())
    run(system)
  }

  def run(system: ActorSystem[_]): Future[Http.ServerBinding] = {
    implicit val sys: ActorSystem[_] = system
    implicit val ec: ExecutionContext = system.executionContext

    val service: HttpRequest => Future[HttpResponse] = GreeterHandler(new GreeterImpl)

    val bound = Http(system)
      .newServerAt(interface = "0.0.0.0", port = Port)
      .bind(service)
      .map(_.addToCoordinatedShutdown(hardTerminationDeadline = 5.seconds))

    bound.onComplete {
      case Success(binding) =>
        val n = system.settings.config.getInt("akka.actor.default-dispatcher.fork-join-executor.parallelism-max")
        system.log.info(s"grpcbench-server: workers=$n")
        system.log.info(s"Server started, listening on ${binding.localAddress}")
      case Failure(e) =>
        system.log.error(s"Failed to bind gRPC endpoint, terminating system: $e")
        system.terminate()
    }
    bound
  }
}
