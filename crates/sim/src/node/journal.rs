//! A simulated node's logs: one in-memory buffer per service (what `Logs` reads) and the kernel
//! ring (what `Dmesg` and the `kernel` log read), both lost at reboot like Talos's. machined's
//! own messages (`[talos] apply config request: ...`) land in its buffer with Talos's timestamp
//! prefix and in the kernel ring, as machined logs to /dev/kmsg. Followers are woken whenever
//! a line is added.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use time::OffsetDateTime;
use tokio::sync::watch;

/// One kernel record.
#[derive(Debug, Clone)]
pub struct Record {
    pub facility: &'static str,
    pub priority: &'static str,
    pub at: OffsetDateTime,
    /// The text, with its trailing newline.
    pub message: String,
}

impl Record {
    /// The record as Talos's Dmesg sends it: `<facility>: <priority, 7 wide>: [<RFC3339Nano>]: <message>`.
    pub fn text(&self) -> String {
        format!(
            "{}: {:>7}: [{}]: {}",
            self.facility,
            self.priority,
            rfc3339_nano(self.at),
            self.message
        )
    }
}

/// Go's `time.RFC3339Nano` in UTC: the fraction without trailing zeros, `Z` for the zone.
pub fn rfc3339_nano(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let mut frac = format!("{:09}", t.nanosecond());
    while frac.ends_with('0') {
        frac.pop();
    }
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{frac}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// machined's log prefix: `YYYY/MM/DD HH:MM:SS.ffffff ` (node-local time, UTC on Talos).
pub fn machined_stamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:06}",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

struct Buffers {
    /// Bumped at every reboot: followers of the old boot stop.
    epoch: u64,
    /// When this boot began, and the Talos version booted (what the services' first lines say).
    booted: OffsetDateTime,
    version: String,
    services: BTreeMap<String, Vec<String>>,
    kernel: Vec<Record>,
}

/// The node's log buffers.
pub struct Journal {
    inner: Mutex<Buffers>,
    /// Bumped whenever a line is added or the buffers are reset.
    pub grew: watch::Sender<u64>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            inner: Mutex::new(Buffers {
                epoch: 0,
                booted: OffsetDateTime::now_utc(),
                version: String::new(),
                services: BTreeMap::new(),
                kernel: Vec::new(),
            }),
            grew: watch::channel(0).0,
        }
    }
}

/// Where a reader stands in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    epoch: u64,
    next: usize,
}

impl Buffers {
    /// A service's buffer, with what it logged at start-up when it is read first.
    fn of(&mut self, svc: &str) -> &mut Vec<String> {
        let (booted, version) = (self.booted, self.version.clone());
        self.services
            .entry(svc.into())
            .or_insert_with(|| super::seeds::lines(svc, booted, &version))
    }
}

impl Journal {
    fn lock(&self) -> MutexGuard<'_, Buffers> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.grew.send_modify(|g| *g += 1);
    }

    /// A boot: empty buffers, and the kernel's first records.
    pub fn boot(&self, version: &str, boots: u64) {
        let now = OffsetDateTime::now_utc();
        let at = |ms: i64| now + time::Duration::milliseconds(ms);
        let mut b = self.lock();
        b.epoch += 1;
        b.booted = now;
        b.version = version.to_string();
        b.services.clear();
        b.kernel = vec![
            Record {
                facility: "kern",
                priority: "notice",
                at: at(0),
                message: "Linux version 6.12.0-talos (simulated)\n".into(),
            },
            Record {
                facility: "kern",
                priority: "info",
                at: at(100),
                message: format!("talos: booting {version} (boot {boots})\n"),
            },
            Record {
                facility: "kern",
                priority: "info",
                at: at(1200),
                message: "virtio_net virtio0 eth0: link up\n".into(),
            },
        ];
        drop(b);
        self.bump();
    }

    /// machined logs `text` (`[talos] ` is prefixed): to its buffer and to the kernel ring.
    pub fn talos(&self, text: &str) {
        let now = OffsetDateTime::now_utc();
        let mut b = self.lock();
        let line = format!("{} [talos] {text}", machined_stamp(now));
        b.of("machined").push(line);
        b.kernel.push(Record {
            facility: "user",
            priority: "warning",
            at: now,
            message: format!("[talos] {text}\n"),
        });
        drop(b);
        self.bump();
    }

    /// A mark of the current boot, for a reader with a source of its own.
    pub fn mark(&self) -> Mark {
        Mark {
            epoch: self.lock().epoch,
            next: 0,
        }
    }

    /// Whether the node has not rebooted since `mark`.
    pub fn still(&self, mark: &Mark) -> bool {
        self.lock().epoch == mark.epoch
    }

    /// A service prints a line.
    pub fn service(&self, svc: &str, line: &str) {
        self.lock().of(svc).push(line.into());
        self.bump();
    }

    /// A service's last lines (`tail` < 0: all of them) and the mark after them.
    pub fn service_tail(&self, svc: &str, tail: i32) -> (Vec<String>, Mark) {
        let mut b = self.lock();
        let epoch = b.epoch;
        let lines = b.of(svc);
        let keep = match usize::try_from(tail) {
            Ok(n) => lines.len().saturating_sub(n),
            Err(_) => 0,
        };
        (
            lines[keep..].to_vec(),
            Mark {
                epoch,
                next: lines.len(),
            },
        )
    }

    /// A service's lines after `mark`; `None` once the node has rebooted.
    pub fn service_since(&self, svc: &str, mark: &mut Mark) -> Option<Vec<String>> {
        let mut b = self.lock();
        if b.epoch != mark.epoch {
            return None;
        }
        let lines = b.of(svc);
        let new = lines.get(mark.next..).unwrap_or_default().to_vec();
        mark.next = lines.len();
        Some(new)
    }

    /// The kernel ring (nothing when `from_end`) and the mark after it.
    pub fn kernel_tail(&self, from_end: bool) -> (Vec<Record>, Mark) {
        let b = self.lock();
        let records = if from_end { vec![] } else { b.kernel.clone() };
        (
            records,
            Mark {
                epoch: b.epoch,
                next: b.kernel.len(),
            },
        )
    }

    /// Kernel records after `mark`; `None` once the node has rebooted.
    pub fn kernel_since(&self, mark: &mut Mark) -> Option<Vec<Record>> {
        let b = self.lock();
        if b.epoch != mark.epoch {
            return None;
        }
        let new = b.kernel.get(mark.next..).unwrap_or_default().to_vec();
        mark.next = b.kernel.len();
        Some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_print_as_talos_dmesg() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_785_578_401_123_456_700).unwrap();
        let r = Record {
            facility: "kern",
            priority: "info",
            at,
            message: "eth0: link up\n".into(),
        };
        assert_eq!(
            r.text(),
            "kern:    info: [2026-08-01T10:00:01.1234567Z]: eth0: link up\n"
        );
        let whole = OffsetDateTime::from_unix_timestamp(1_785_578_401).unwrap();
        assert_eq!(rfc3339_nano(whole), "2026-08-01T10:00:01Z");
        assert_eq!(machined_stamp(at), "2026/08/01 10:00:01.123456");
    }

    #[test]
    fn tails_and_marks() {
        let j = Journal::default();
        j.boot("v1.13.7", 1);
        let (last, mut mark) = j.service_tail("kubelet", 2);
        let seeded = super::super::seeds::lines("kubelet", j.lock().booted, "v1.13.7");
        assert_eq!(last, seeded[seeded.len() - 2..]);
        assert!(
            last[1].ends_with(
                " kubelet_node_status.go:78] \"Successfully registered node\" node=\"talos-node\""
            ),
            "{last:?}"
        );
        assert!(
            j.service_tail("kubelet", 0).0.is_empty(),
            "tail 0: no history"
        );
        assert_eq!(j.service_tail("kubelet", -1).0.len(), seeded.len());
        j.service("kubelet", "new");
        assert_eq!(j.service_since("kubelet", &mut mark).unwrap(), ["new"]);
        assert!(j.service_since("kubelet", &mut mark).unwrap().is_empty());
        j.boot("v1.13.7", 2);
        assert!(j.service_since("kubelet", &mut mark).is_none());
    }
}
