//! Generated Talos API messages (from `proto/`, compiled by build.rs).

/// The `common` package of the Talos API.
pub mod common {
    tonic::include_proto!("common");
}

/// `google.rpc` messages Talos embeds in its metadata.
pub mod google {
    pub mod rpc {
        tonic::include_proto!("google.rpc");
    }
}
