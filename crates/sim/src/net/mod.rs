//! A simulated node on the network: its listener and TLS (certificates, reloads on a new
//! config), the faults a test can inject (refusals, delays, floods, clock skew, unhealthy
//! services), message and open-file limits, and the address blocks `talm sim` serves.

pub mod certs;
pub mod faults;
pub mod fdlimit;
pub mod flood;
pub mod limit;
pub mod range;
pub mod reload;
pub mod server;
pub mod skew;
pub mod unhealthy;
