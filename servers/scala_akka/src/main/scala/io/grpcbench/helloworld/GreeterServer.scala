package io.grpcbench.helloworld

import com.typesafe.config.{ Config, ConfigFactory }
import helloworld._
import akka.NotUsed
import akka.actor.typed.ActorSystem
import akka.actor.typed.scaladsl.Behaviors
import akka.grpc.scaladsl.ServiceHandler
import akka.http.scaladsl.{ ConnectionContext, Http, HttpsConnectionContext }
import akka.http.scaladsl.model.{ HttpRequest, HttpResponse }
import akka.stream.Materializer
import akka.stream.scaladsl.{ Sink, Source }

import java.io.FileInputStream
import java.nio.file.{ Files, Path }
import java.security.{ KeyFactory, KeyStore, SecureRandom }
import java.security.cert.{ Certificate, CertificateFactory }
import java.security.spec.PKCS8EncodedKeySpec
import java.util.Base64
import javax.net.ssl.{ KeyManagerFactory, SSLContext }
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.concurrent.{ ExecutionContext, Future }
import scala.util.{ Failure, Success }

/** Implements the SayHello RPC: the inner message, unchanged. */
class GreeterImpl extends Greeter {
  override def sayHello(in: HelloRequest): Future[HelloReply] =
    Future.successful(HelloReply(response = in.request))
}

/** The streaming RPCs, as Akka gRPC's route guide example: a `Source` in, a `Source` out. */
class StreamingGreeterImpl(implicit mat: Materializer) extends StreamingGreeter {
  override def pingPong(in: Source[HelloRequest, NotUsed]): Source[HelloReply, NotUsed] =
    in.map(req => HelloReply(response = req.request))

  override def serverStream(in: RepliesRequest): Source[HelloReply, NotUsed] =
    Source.repeat(HelloReply(response = in.request)).take(in.replies.toLong)

  override def clientStream(in: Source[HelloRequest, NotUsed]): Future[HelloReply] =
    in.runWith(Sink.lastOption).map(last => HelloReply(response = last.flatMap(_.request)))(mat.executionContext)
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

  /**
   * The certificate chain and key paths when GRPC_TLS_CERT and GRPC_TLS_KEY are both set (TLS), None
   * when neither is (plaintext); one without the other ends the server with status 2.
   */
  def tlsFiles(): Option[(String, String)] =
    (sys.env.get("GRPC_TLS_CERT").filter(_.nonEmpty), sys.env.get("GRPC_TLS_KEY").filter(_.nonEmpty)) match {
      case (Some(cert), Some(key)) => Some((cert, key))
      case (None, None)            => None
      case (Some(_), None) =>
        System.err.println("grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not")
        sys.exit(2)
      case (None, Some(_)) =>
        System.err.println("grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not")
        sys.exit(2)
    }

  /**
   * An HTTPS context from the PEM files, as Akka gRPC's interop TLS server builds it: the PKCS#8
   * key through the JDK's KeyFactory.
   */
  def httpsContext(certFile: String, keyFile: String): HttpsConnectionContext = {
    val pem = Files.readString(Path.of(keyFile)).linesIterator.filterNot(_.startsWith("-----")).mkString
    val key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getMimeDecoder.decode(pem)))
    val chain = Using.resource(new FileInputStream(certFile)) { in =>
      CertificateFactory.getInstance("X.509").generateCertificates(in).asScala.toArray[Certificate]
    }
    val keyStore = KeyStore.getInstance("PKCS12")
    keyStore.load(null)
    keyStore.setKeyEntry("private", key, Array.emptyCharArray, chain)
    val keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm)
    keyManagers.init(keyStore, Array.emptyCharArray)
    val context = SSLContext.getInstance("TLS")
    context.init(keyManagers.getKeyManagers, null, new SecureRandom)
    ConnectionContext.httpsServer(context)
  }

  def main(args: Array[String]): Unit = {
    val tls = tlsFiles()
    val system = ActorSystem[Nothing](Behaviors.empty[Nothing], "GreeterServer", config())
    run(system, tls)
  }

  def run(system: ActorSystem[_], tls: Option[(String, String)]): Future[Http.ServerBinding] = {
    implicit val sys: ActorSystem[_] = system
    implicit val ec: ExecutionContext = system.executionContext

    val service: HttpRequest => Future[HttpResponse] = ServiceHandler.concatOrNotFound(
      GreeterHandler.partial(new GreeterImpl),
      StreamingGreeterHandler.partial(new StreamingGreeterImpl))

    val plain = Http(system).newServerAt(interface = "0.0.0.0", port = Port)
    val bound = tls
      .fold(plain) { case (cert, key) => plain.enableHttps(httpsContext(cert, key)) }
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
