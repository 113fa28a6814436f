//! `image-archive`: reads the release binary, the libraries it links (as `ldd` names them) and
//! the machine's CA certificates, and writes the product's OCI image archive (`make image`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Parser;
use eviction_autoscaler_image::{Metadata, Runtime, linked_libraries, root_filesystem, write_archive};

#[derive(Parser)]
#[command(about = "Writes the product's OCI image archive (make image)")]
struct Args {
    /// The product binary to put in the image.
    #[arg(long)]
    binary: PathBuf,
    /// Where to write the archive, `<name>-<tag>.oci.tar` (the name's last path segment).
    #[arg(long)]
    out_dir: PathBuf,
    /// Repository name the archive tags the image with.
    #[arg(long, default_value = "eviction-autoscaler")]
    name: String,
    /// The image tag and its org.opencontainers.image.version label: the crate version.
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    tag: String,
    /// The commit, for the org.opencontainers.image.revision label.
    #[arg(long)]
    revision: String,
    /// Seconds since the epoch for every timestamp in the archive: the commit's time makes two
    /// builds of one commit byte-identical.
    #[arg(long, env = "SOURCE_DATE_EPOCH")]
    created: i64,
    /// The CA certificates bundle to include.
    #[arg(long, default_value = "/etc/ssl/certs/ca-certificates.crt")]
    ca_certificates: PathBuf,
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("read {}", path.display()))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let ldd = Command::new("ldd")
        .arg(&args.binary)
        .output()
        .context("run ldd (Debian package libc-bin) to list the libraries the binary links")?;
    let output = format!("{}{}", String::from_utf8_lossy(&ldd.stdout), String::from_utf8_lossy(&ldd.stderr));
    // A static binary makes ldd fail with "not a dynamic executable": it needs no libraries.
    if !ldd.status.success() && !output.contains("not a dynamic executable") {
        bail!("ldd {}: {}", args.binary.display(), output.trim());
    }
    let libraries = linked_libraries(&output).map_err(anyhow::Error::msg)?;
    let runtime = Runtime {
        binary: read(&args.binary)?,
        libraries: libraries
            .into_iter()
            .map(|path| Ok((path.clone(), read(Path::new(&path))?)))
            .collect::<anyhow::Result<_>>()?,
        ca_certificates: read(&args.ca_certificates)
            .context("the image carries the machine's CA certificates (Debian package ca-certificates)")?,
    };
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let metadata = Metadata {
        name: args.name,
        version: args.tag,
        revision: args.revision,
        created: args.created,
        architecture: architecture.to_owned(),
        licenses: env!("CARGO_PKG_LICENSE").to_owned(),
    };
    let archive = write_archive(&metadata, &root_filesystem(runtime)).context("write the archive")?;
    let file_name =
        format!("{}-{}.oci.tar", metadata.name.rsplit('/').next().unwrap_or_default(), metadata.version);
    let out = args.out_dir.join(file_name);
    std::fs::create_dir_all(&args.out_dir).with_context(|| format!("create {}", args.out_dir.display()))?;
    // Written aside and renamed: a reader never sees half an archive.
    let partial = out.with_extension("partial");
    std::fs::write(&partial, &archive.bytes).with_context(|| format!("write {}", partial.display()))?;
    std::fs::rename(&partial, &out).with_context(|| format!("write {}", out.display()))?;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "{}: manifest {}, layer {:.1} MiB compressed ({:.1} MiB unpacked)",
        out.display(),
        archive.manifest_digest,
        mib(archive.layer_size),
        mib(archive.unpacked_size)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Args::command().debug_assert();
    }
}
