//! Compiles the vendored kubelet protocol definitions (`proto/`, see its README) into the DRA
//! kubelet plugin's gRPC server code, with protox: no `protoc` binary needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/k8s.io/kubelet/pkg/apis/dra/v1/api.proto",
        "proto/k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
