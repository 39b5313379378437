//! Talos version contracts: which generation rules apply for a `--talos-version`.

use anyhow::Result;

use talm_base::error::hinted;

/// A Talos version contract (`major.minor`); `None` means the current contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Contract(pub Option<(u32, u32)>);

impl Contract {
    pub const CURRENT: Contract = Contract(None);

    /// Parses `v1.12`, `1.12`, `v1.12.3` or `v1.13.0-alpha.1`; empty means current.
    pub fn parse(s: &str) -> Result<Contract> {
        let t = s.trim();
        if t.is_empty() {
            return Ok(Contract::CURRENT);
        }
        let body = t.strip_prefix('v').unwrap_or(t);
        let core = body.split(['-', '+']).next().unwrap_or("");
        let mut it = core.split('.');
        let parsed = (|| {
            let major = it.next()?.parse::<u32>().ok()?;
            let minor = it.next()?.parse::<u32>().ok()?;
            match it.next() {
                None => {}
                Some(p) => {
                    p.parse::<u32>().ok()?;
                }
            }
            it.next().is_none().then_some((major, minor))
        })();
        match parsed {
            Some(v) => Ok(Contract(Some(v))),
            None => Err(hinted(
                format!("invalid Talos version {s:?}"),
                "use a version like v1.12 or v1.13.2",
            )),
        }
    }

    /// Whether this contract is newer than `major.minor` (the current contract is newer than all).
    pub fn newer_than(self, major: u32, minor: u32) -> bool {
        self.greater_than(major, minor)
    }

    fn greater_than(self, major: u32, minor: u32) -> bool {
        match self.0 {
            None => true,
            Some(v) => v > (major, minor),
        }
    }

    /// Contracts above 1.2 use a secretbox secret instead of AES-CBC.
    pub fn secretbox(self) -> bool {
        self.greater_than(1, 2)
    }

    /// Contracts above 1.6 use an RSA-4096 service-account key instead of ECDSA.
    pub fn rsa_service_account(self) -> bool {
        self.greater_than(1, 6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions() {
        assert_eq!(Contract::parse("").unwrap(), Contract::CURRENT);
        assert_eq!(Contract::parse("v1.12").unwrap(), Contract(Some((1, 12))));
        assert_eq!(Contract::parse("1.6.3").unwrap(), Contract(Some((1, 6))));
        assert_eq!(
            Contract::parse("v1.13.0-alpha.1").unwrap(),
            Contract(Some((1, 13)))
        );
        assert!(Contract::parse("v1").is_err());
        assert!(Contract::parse("latest").is_err());
    }

    #[test]
    fn contract_rules() {
        assert!(!Contract::parse("v1.2").unwrap().secretbox());
        assert!(Contract::parse("v1.3").unwrap().secretbox());
        assert!(!Contract::parse("v1.6").unwrap().rsa_service_account());
        assert!(Contract::parse("v1.7").unwrap().rsa_service_account());
        assert!(Contract::CURRENT.rsa_service_account());
    }
}
