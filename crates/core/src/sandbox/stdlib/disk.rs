//! `talm/disk`: disk facts of a node computed from its lookup results the way the Go talm
//! presets do (the install disk, its stable NVMe path, the comment listing the discovered
//! disks), as natives for the same reason as `talm/net`. Disk fields use the Talos YAML names:
//! `dev_path`, `pretty_size` and so on in `disks`, `devPath` in `systemdisk`.

use rhai::{Dynamic, EvalAltResult, FuncRegistration, ImmutableString, Module, NativeCallContext};

use super::go::{self, items, spec, Res, Step};
use crate::sandbox::tpl;

/// The install disk when discovery finds none.
pub const FALLBACK_DISK: &str = "/dev/sda";

/// Comment line that opens `disks_info`.
pub const DISKS_INFO_HEADER: &str = "# -- Discovered disks:";

/// Said after the disk name when no stable NVMe path is known.
pub const NVME_FALLBACK_NOTE: &str =
    " # Unable to determine a stable NVMe disk path, falling back to the disk name";

/// What `{{ v }}` prints here: "" for nil, text as it is, anything else as the script's
/// `to_string` prints it.
fn text(ctx: &NativeCallContext, v: Dynamic) -> Result<ImmutableString, Box<EvalAltResult>> {
    if v.is_unit() {
        return Ok(ImmutableString::new());
    }
    if let Some(s) = go::as_str(&v) {
        return Ok(s);
    }
    ctx.call_native_fn("to_string", (v,))
}

/// Whether discovery knows enough about a disk to offer it: a truthy wwid or model.
fn is_identified(disk: &Dynamic) -> bool {
    tpl::truthy(&spec(disk, "wwid")) || tpl::truthy(&spec(disk, "model"))
}

fn system_disk_name(
    ctx: &NativeCallContext,
    systemdisk: &Dynamic,
    disks: &Dynamic,
) -> Result<ImmutableString, Box<EvalAltResult>> {
    if tpl::truthy(systemdisk) {
        return text(ctx, spec(systemdisk, "devPath"));
    }
    match items(disks, |all| all.iter().find(|d| is_identified(d)).cloned()) {
        Some(d) => text(ctx, spec(&d, "dev_path")),
        None => Ok(FALLBACK_DISK.into()),
    }
}

fn disks_info(ctx: &NativeCallContext, disks: &Dynamic) -> Res {
    let mut out = format!("\n{DISKS_INFO_HEADER}");
    items(disks, |all| {
        for d in all.iter().filter(|d| is_identified(d)) {
            let field = |key: &str| text(ctx, spec(d, key));
            out.push_str(&format!(
                "\n# {}:\n#    model: {}\n#    serial: {}\n#    wwid: {}\n#    size: {}",
                field("dev_path")?,
                field("model")?,
                field("serial")?,
                field("wwid")?,
                field("pretty_size")?,
            ));
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn system_disk_nvme_id(ctx: &NativeCallContext, systemdisk: &Dynamic, disks: &Dynamic) -> Res {
    let name = system_disk_name(ctx, systemdisk, disks)?;
    let found = items(disks, |all| {
        all.iter().find_map(|d| {
            let nvme = go::is_str(&spec(d, "transport"), "nvme");
            let wwid = spec(d, "wwid");
            (go::is_str(&spec(d, "dev_path"), &name) && nvme && tpl::truthy(&wwid)).then_some(wwid)
        })
    });
    match found {
        Some(wwid) => Ok(format!("/dev/disk/by-id/nvme-{}", text(ctx, wwid)?).into()),
        None => Ok(format!("{name}{NVME_FALLBACK_NOTE}").into()),
    }
}

/// The `talm/disk` module.
pub fn module() -> Module {
    let mut m = Module::new();
    m.set_var("FALLBACK_DISK", FALLBACK_DISK);
    m.set_var("DISKS_INFO_HEADER", DISKS_INFO_HEADER);
    m.set_var("NVME_FALLBACK_NOTE", NVME_FALLBACK_NOTE);
    FuncRegistration::new("system_disk_name")
        .with_comments(["/// The install disk: the `systemdisk` lookup's `devPath` when it found one, else the `dev_path` of the first disk with a wwid or model in the `disks` list, else /dev/sda."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, systemdisk: &mut Dynamic, disks: Dynamic| {
                system_disk_name(&ctx, systemdisk, &disks)
            },
        );
    FuncRegistration::new("disks_info")
        .with_comments(["/// The YAML comment listing the disks with a wwid or model, starting with a newline: per disk its path, then model, serial, wwid and size (4 spaces after `#`, missing fields empty)."])
        .set_into_module(&mut m, |ctx: NativeCallContext, disks: &mut Dynamic| {
            disks_info(&ctx, disks)
        });
    FuncRegistration::new("system_disk_nvme_id")
        .with_comments(["/// A stable path for the install disk: `/dev/disk/by-id/nvme-<wwid>` when its `disks` entry has transport nvme and a wwid, else the disk name followed by a comment saying so."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, systemdisk: &mut Dynamic, disks: Dynamic| {
                system_disk_nvme_id(&ctx, systemdisk, &disks)
            },
        );
    m.build_index();
    m
}
