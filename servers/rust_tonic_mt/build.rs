// Generates the helloworld messages and the Greeter service from the
// scenario's proto, which the orchestrator places in scenario/ of the build
// context (tonic's helloworld example does the same with proto/helloworld.proto).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    tonic_prost_build::configure()
        .build_client(false)
        .compile_protos(&["scenario/helloworld.proto"], &["scenario"])?;
    Ok(())
}
