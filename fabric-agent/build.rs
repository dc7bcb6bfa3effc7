//! Compiles the vendored kubelet protocol definitions (`proto/`, see its README) into the gRPC
//! code of the agent's kubelet plugins (device plugin, DRA), with protox: no `protoc` binary
//! needed. Clients are generated too: tests reach the plugins as the kubelet would.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto",
        "proto/k8s.io/kubelet/pkg/apis/dra/v1/api.proto",
        "proto/k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
