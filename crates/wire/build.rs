//! Build script: compiles `proto/` into Rust (protox, no system protoc).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    compile_protos()
}

fn compile_protos() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/common/common.proto",
        "proto/machine/machine.proto",
        "proto/machine/events.proto",
        "proto/machine/image.proto",
        "proto/machine/lifecycle.proto",
        "proto/machine/debug.proto",
        "proto/machine/change.proto",
        "proto/storage/storage.proto",
        "proto/time/time.proto",
        "proto/inspect/inspect.proto",
        "proto/cluster/cluster.proto",
        "proto/v1alpha1/resource.proto",
        "proto/v1alpha1/state.proto",
        "proto/v1alpha1/meta.proto",
        "proto/resource/config/config.proto",
        "proto/resource/definitions/enums/enums.proto",
        "proto/resource/definitions/block/block.proto",
        "proto/resource/definitions/block/volumes.proto",
        "proto/resource/definitions/runtime/runtime.proto",
        "proto/resource/definitions/network/network.proto",
        "proto/resource/definitions/v1alpha1/v1alpha1.proto",
        "proto/resource/definitions/time/time.proto",
        "proto/resource/definitions/etcd/etcd.proto",
        "proto/resource/definitions/hardware/hardware.proto",
        "proto/resource/definitions/cluster/cluster.proto",
        "proto/resource/definitions/k8s/k8s.proto",
        "proto/resource/definitions/secrets/secrets.proto",
    ];
    let fds = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
