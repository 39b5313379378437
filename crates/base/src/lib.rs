//! talm's ground floor, read by every other crate and reading none of them: user-facing errors
//! and hints, Go's text formats (durations, humanize, tabwriter, JSONPath), YAML readers and
//! emitters, bounded input files, caches of pure work, secret masks, output and progress sinks,
//! addresses, and the process heap.

pub mod address;
pub mod ahead;
pub mod caches;
pub mod duration;
pub mod error;
pub mod gojson;
pub mod heap;
pub mod humanize;
pub mod input;
pub mod jsonpath;
pub mod mask;
pub mod netip;
pub mod output;
pub mod pcap;
pub mod printable;
pub mod progress;
pub mod rt;
pub mod tabwriter;
pub mod yaml;
