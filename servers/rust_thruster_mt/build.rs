// Generates the prost messages from the scenario's proto, which the
// orchestrator places in scenario/ of the build context. thruster-grpc routes
// by path, so no service code is generated. Needs protoc on PATH (or PROTOC).
fn main() -> std::io::Result<()> {
    prost_build::compile_protos(&["scenario/helloworld.proto"], &["scenario"])
}
