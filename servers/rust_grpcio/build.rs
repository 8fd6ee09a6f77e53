// Generates the prost messages and the grpcio Greeter service (create_greeter)
// from the scenario's proto, which the orchestrator places in scenario/ of the
// build context. Needs protoc on PATH (or PROTOC).
fn main() {
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    grpcio_compiler::prost_codegen::compile_protos(
        &["scenario/helloworld.proto"],
        &["scenario"],
        &out_dir,
    )
    .expect("compile scenario/helloworld.proto");
    println!("cargo:rerun-if-changed=scenario/helloworld.proto");
}
