//! Tests of the API server over HTTPS with the kube client and kubectl.
