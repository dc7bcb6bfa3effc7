//! Compiles the kubelet's plugin APIs vendored in `proto/` (see proto/k8s.io/kubelet/README.md)
//! with protox, a protobuf compiler in Rust: building needs no protoc.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "k8s.io/kubelet/deviceplugin/v1beta1/api.proto",
        "k8s.io/kubelet/pluginregistration/v1/api.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed=proto/{proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
