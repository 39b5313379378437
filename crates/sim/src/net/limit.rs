//! The size limit on incoming messages, answered as grpc-go answers it (`ResourceExhausted`,
//! `grpc: received message larger than max (N vs. M)`) rather than with tonic's own
//! `OutOfRange`: a layer reads the length prefix of every gRPC frame of a request body and fails
//! the body as soon as a frame announces more than the limit, before it is buffered.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use http_body::{Frame, SizeHint};
use tonic::body::Body;
use tonic::codegen::{http, Bytes, Service};
use tonic::Status;

/// The layer: the largest message a node accepts, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct MaxReceive(pub usize);

impl<S> tower_layer::Layer<S> for MaxReceive {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Limited<S> {
        Limited { inner, max: self.0 }
    }
}

/// A service whose request bodies are checked frame by frame.
#[derive(Clone, Debug)]
pub struct Limited<S> {
    inner: S,
    max: usize,
}

impl<S> Service<http::Request<Body>> for Limited<S>
where
    S: Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let max = self.max;
        self.inner.call(req.map(|body| {
            Body::new(Frames {
                inner: body,
                scan: Scan::new(max),
            })
        }))
    }
}

/// Where the reader stands in the gRPC framing: 1 flag byte and a 4-byte big-endian length,
/// then that many bytes of message.
#[derive(Debug)]
struct Scan {
    max: usize,
    header: [u8; 5],
    have: usize,
    skip: u64,
}

impl Scan {
    fn new(max: usize) -> Scan {
        Scan {
            max,
            header: [0; 5],
            have: 0,
            skip: 0,
        }
    }

    /// Reads a chunk of the body; an error for a frame over the limit.
    fn feed(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.skip > 0 {
                let take = self.skip.min(data.len() as u64) as usize;
                self.skip -= take as u64;
                data = &data[take..];
                continue;
            }
            self.header[self.have] = data[0];
            self.have += 1;
            data = &data[1..];
            if self.have == 5 {
                self.have = 0;
                let mut len = [0u8; 4];
                len.copy_from_slice(&self.header[1..]);
                let len = u32::from_be_bytes(len);
                if len as usize > self.max {
                    return Err(Status::resource_exhausted(format!(
                        "grpc: received message larger than max ({len} vs. {})",
                        self.max
                    )));
                }
                self.skip = u64::from(len);
            }
        }
        Ok(())
    }
}

struct Frames {
    inner: Body,
    scan: Scan,
}

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if let Some(Ok(f)) = &frame {
            if let Some(data) = f.data_ref() {
                if let Err(st) = self.scan.feed(data) {
                    return Poll::Ready(Some(Err(st)));
                }
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_over_the_limit_are_refused_across_chunks() {
        let mut s = Scan::new(10);
        // A 3-byte message, then a header split over two chunks announcing 11 bytes.
        assert!(s.feed(&[0, 0, 0, 0, 3, b'a', b'b']).is_ok());
        assert!(s.feed(&[b'c', 0, 0, 0]).is_ok());
        let st = s.feed(&[0, 11]).unwrap_err();
        assert_eq!(st.code(), tonic::Code::ResourceExhausted);
        assert_eq!(
            st.message(),
            "grpc: received message larger than max (11 vs. 10)"
        );
        let mut s = Scan::new(10);
        assert!(s.feed(&[0, 0, 0, 0, 10]).is_ok(), "at the limit is fine");
    }
}
