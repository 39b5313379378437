//! Images pulled into a simulated node's containerd through `ImageService.Pull`: the
//! reference normalised as containerd names it, the pull's layer progress (none when the image
//! is already there), the digest-pinned name Talos answers, and the records `image list` then
//! shows. A registry under the reserved `.invalid` domain has no images (NotFound).

use tonic::Status;

use crate::node::Node;
use crate::world::images::{Image, Store};
use crate::world::{hex, World};

/// A reference as containerd names it: `nginx` → `docker.io/library/nginx:latest`.
pub fn normalize(r: &str) -> Result<String, Status> {
    let bad = || {
        Status::unknown(format!(
            "failed to parse image reference {r:?}: invalid reference format"
        ))
    };
    let r = r.trim();
    if r.is_empty() || r.contains(char::is_whitespace) || r.starts_with('/') || r.ends_with('/') {
        return Err(bad());
    }
    let (name, digest) = match r.split_once('@') {
        Some((n, d)) if d.starts_with("sha256:") && d.len() == 71 => (n, Some(d)),
        Some(_) => return Err(bad()),
        None => (r, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let (repo, tag) = match last.split_once(':') {
        Some((_, "")) => return Err(bad()),
        Some((_, t)) => (&name[..name.len() - t.len() - 1], Some(t)),
        None => (name, None),
    };
    let first = repo.split('/').next().unwrap_or(repo);
    let has_domain = repo.contains('/') && (first.contains(['.', ':']) || first == "localhost");
    let repo = match (has_domain, repo.contains('/')) {
        (true, _) => repo.to_string(),
        (false, true) => format!("docker.io/{repo}"),
        (false, false) => format!("docker.io/library/{repo}"),
    };
    let path = repo.split_once('/').map_or("", |(_, p)| p);
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(bad());
    }
    Ok(match (tag, digest) {
        (_, Some(d)) => format!(
            "{repo}{}@{d}",
            tag.map(|t| format!(":{t}")).unwrap_or_default()
        ),
        (Some(t), None) => format!("{repo}:{t}"),
        (None, None) => format!("{repo}:latest"),
    })
}

/// The repository of a normalised reference (no tag, no digest).
fn repository(reference: &str) -> &str {
    let no_digest = reference.split('@').next().unwrap_or(reference);
    let last = no_digest.rsplit('/').next().unwrap_or(no_digest);
    match last.split_once(':') {
        Some((_, t)) => &no_digest[..no_digest.len() - t.len() - 1],
        None => no_digest,
    }
}

fn digest_of(reference: &str) -> String {
    match reference.split_once('@') {
        Some((_, d)) => d.to_string(),
        None => format!("sha256:{}", hex(0, &format!("{reference}#digest"), 64)),
    }
}

fn size_of(reference: &str) -> i64 {
    let h = hex(0, &format!("{reference}#size"), 6);
    5_000_000 + i64::from_str_radix(&h, 16).unwrap_or(0) % 60_000_000
}

/// What a pull sends: the layers' progress (empty when the image is there) and the name.
pub struct Pulled {
    pub layers: Vec<(String, i64)>,
    pub name: String,
}

impl Node {
    /// Whether `store` holds the image `name` (a normalized reference): listed or pulled, and not
    /// removed since.
    pub fn holds(&self, store: Store, name: &str) -> bool {
        let w = World::of(self);
        with_pulled(
            crate::world::images::list(&w, store),
            store,
            &self.state().changes,
        )
        .iter()
        .any(|i| i.name == name)
    }

    /// Whether containerd's `GetImage(name)` finds an image in `store`: a name it lists, or one
    /// of the aliases Talos's pull adds to what it pulls (its digest, and its repository pinned
    /// to that digest, the name the pull answers).
    pub fn answers_to(&self, store: Store, name: &str) -> bool {
        let w = World::of(self);
        with_pulled(
            crate::world::images::list(&w, store),
            store,
            &self.state().changes,
        )
        .iter()
        .any(|i| {
            i.name == name
                || i.digest == name
                || format!("{}@{}", repository(&i.name), i.digest) == name
        })
    }

    /// Pulls `reference` into `store`.
    pub fn pull(&self, store: Store, reference: &str) -> Result<Pulled, Status> {
        let name = normalize(reference)?;
        let domain = name.split('/').next().unwrap_or("");
        if domain.ends_with(".invalid") {
            return Err(Status::not_found(format!(
                "error pulling image: {name}: not found"
            )));
        }
        let present = self.holds(store, &name);
        let size = size_of(&name);
        let layers = if present {
            vec![]
        } else {
            vec![
                (hex(0, &format!("{name}#layer0"), 64), size * 3 / 4),
                (hex(0, &format!("{name}#layer1"), 64), size - size * 3 / 4),
            ]
        };
        if !present {
            let mut st = self.state();
            st.changes
                .removed
                .retain(|(s, n)| !(*s == store && *n == name));
            st.changes.pulled.push((store, name.clone()));
            drop(st);
            self.journal.talos(&format!("image pulled: {name}"));
        }
        let pinned = if name.contains('@') {
            name.clone()
        } else {
            format!("{}@{}", repository(&name), digest_of(&name))
        };
        Ok(Pulled {
            layers,
            name: pinned,
        })
    }
}

impl Node {
    /// Removes the image record `name` from `store`, as containerd's ImageService.Delete does
    /// (that name only: the image's other names stay); machined's NotFound when there is none.
    pub fn remove_image(&self, store: Store, name: &str) -> Result<(), Status> {
        let w = World::of(self);
        let mut st = self.state();
        let listed = with_pulled(crate::world::images::list(&w, store), store, &st.changes);
        if !listed.iter().any(|i| i.name == name) {
            return Err(Status::not_found(format!("image {name} not found")));
        }
        st.changes.removed.push((store, name.to_string()));
        Ok(())
    }
}

/// `list` of a store with the images pulled into it added and those removed taken out, by name.
pub fn with_pulled(mut list: Vec<Image>, store: Store, changes: &super::Changes) -> Vec<Image> {
    for (s, name) in &changes.pulled {
        if *s != store || list.iter().any(|i| &i.name == name) {
            continue;
        }
        let digest = digest_of(name);
        let labels = if store == Store::InMem {
            vec![]
        } else {
            vec![("io.cri-containerd.image".to_string(), "managed".to_string())]
        };
        let mut names = vec![name.clone()];
        if store != Store::InMem {
            if !name.contains('@') {
                names.push(format!("{}@{digest}", repository(name)));
            }
            names.push(format!("sha256:{}", hex(0, &format!("{name}#config"), 64)));
        }
        for n in names {
            list.push(Image {
                name: n,
                digest: digest.clone(),
                size: size_of(name),
                created: 1_778_000_000,
                labels: labels.clone(),
            });
        }
    }
    list.retain(|i| {
        !changes
            .removed
            .iter()
            .any(|(s, n)| *s == store && *n == i.name)
    });
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list.dedup_by(|a, b| a.name == b.name);
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_normalise_as_containerd_names_them() {
        assert_eq!(
            normalize("nginx").unwrap(),
            "docker.io/library/nginx:latest"
        );
        assert_eq!(
            normalize("nginx:1.27").unwrap(),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(
            normalize("bitnami/redis:7").unwrap(),
            "docker.io/bitnami/redis:7"
        );
        assert_eq!(
            normalize("ghcr.io/siderolabs/kubelet:v1.36.2").unwrap(),
            "ghcr.io/siderolabs/kubelet:v1.36.2"
        );
        assert_eq!(
            normalize("localhost:5000/app").unwrap(),
            "localhost:5000/app:latest"
        );
        assert!(normalize("Nope/UPPER:1").is_err());
        assert!(normalize("a b").is_err());
        assert_eq!(
            repository("docker.io/library/nginx:1.27"),
            "docker.io/library/nginx"
        );
        assert_eq!(
            repository("localhost:5000/app:latest"),
            "localhost:5000/app"
        );
    }
}
