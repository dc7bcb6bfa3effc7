//! `spinel-agent install-cni`: puts the `spinel` CNI plugin and its node settings on the node,
//! run by the agent's DaemonSet as an init container with the host's CNI binary directory and
//! `/etc/spinel` mounted.
//!
//! - Everything is checked before anything is written: the plugin in the image answers
//!   `--version`, the settings (a ConfigMap key) parse with the CNI's own schema
//!   ([`spinel_node::cni_settings`]), the settings' directory is not writable by others. A bad
//!   key is an error that changes nothing.
//! - The plugin is written under a temporary name in the target directory, synced, then renamed
//!   over `spinel`: a runtime executes the old file or the new one, never half of one, and a
//!   running old plugin keeps its inode (writing into an executing file fails with ETXTBSY).
//!   Temporary files a killed run left behind are removed first.
//! - The plugin goes first, then the settings: a new plugin reads the old settings (keys are
//!   only ever added), an old plugin could refuse new ones.
//! - A plugin already there that says it is newer (`spinel --version`) is kept unless
//!   `--force`; identical bytes are left alone; one that does not say a version is replaced.
//! - The settings file is written the same way, owned by root, mode 0644 (the CNI refuses a
//!   file that is not root's or is writable by group or others).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spinel_node::cni_settings::{Settings, SettingsError};

/// The plugin's file name in the CNI binary directory (its `type`).
pub const PLUGIN: &str = "spinel";

/// How long a plugin may take to answer `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// `spinel-agent install-cni` flags.
#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "spinel-agent install-cni",
    version,
    about = "Install the spinel CNI plugin and its node settings on this node"
)]
pub struct InstallFlags {
    /// The plugin to install (the image's).
    #[arg(long, default_value = "/usr/local/bin/spinel")]
    pub source: PathBuf,
    /// The node's CNI binary directory, as mounted here.
    #[arg(long, default_value = "/host/opt/cni/bin")]
    pub bin_dir: PathBuf,
    /// The settings to install (the ConfigMap's key); none: leave the node's file as it is.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// Where the CNI reads its settings, as mounted here.
    #[arg(long, default_value = "/host/etc/spinel/cni.json")]
    pub settings_target: PathBuf,
    /// Replace the installed plugin even when it says it is newer.
    #[arg(long)]
    pub force: bool,
    /// Logging.
    #[command(flatten)]
    pub log: spinel_kube::logging::LogArgs,
}

/// Why a plugin's `--version` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// It could not be started (missing, not executable, needs a loader the image lacks).
    #[error("cannot be run")]
    Spawn(#[source] std::io::Error),
    /// It did not exit in time (and was killed).
    #[error("did not answer --version within {}s", VERSION_TIMEOUT.as_secs())]
    Timeout,
    /// Waiting for it or reading its answer failed.
    #[error("cannot be waited for")]
    Wait(#[source] std::io::Error),
    /// It exited with a failure.
    #[error("--version failed ({0})")]
    Failed(std::process::ExitStatus),
    /// It answered something else than `spinel X.Y.Z`.
    #[error("answered --version with {0:?}, not `spinel X.Y.Z`")]
    NotSpinel(String),
}

/// Why nothing (or not everything) was installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The plugin to install is not a working `spinel`.
    #[error("the plugin to install, {path}, {source}")]
    Source {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: VersionError,
    },
    /// The plugin to install cannot be read.
    #[error("cannot read the plugin to install, {path}")]
    ReadSource {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The settings would be refused by the CNI.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The settings' directory may be changed by others than root.
    #[error(
        "{path} is writable by group or others or not owned by root: the CNI must not trust \
         settings written there (chmod 755, chown root)"
    )]
    UntrustedDir {
        /// The directory.
        path: PathBuf,
    },
    /// A write failed (read-only or full file system, no such directory, ...).
    #[error("cannot write {path}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A plugin version, `MAJOR.MINOR.PATCH[-PRE]` (pre-releases before their release, compared
/// as text among themselves).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PluginVersion {
    core: (u64, u64, u64),
    /// `true` for a release, so it sorts after its pre-releases.
    release: bool,
    pre: String,
}

impl PluginVersion {
    /// Reads `spinel --version`'s answer (`spinel 0.1.0`).
    pub fn parse(answer: &str) -> Option<Self> {
        let v = answer.trim().strip_prefix("spinel ")?;
        let (core, pre) = v.split_once('-').unwrap_or((v, ""));
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let core = (parts.next()??, parts.next()??, parts.next()??);
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            core,
            release: pre.is_empty(),
            pre: pre.to_owned(),
        })
    }
}

impl std::fmt::Display for PluginVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b, c) = self.core;
        write!(f, "{a}.{b}.{c}")?;
        if !self.release {
            write!(f, "-{}", self.pre)?;
        }
        Ok(())
    }
}

/// What happened to the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginOutcome {
    /// Written (there was none, an older one, or one without a version).
    Installed {
        /// The version installed.
        version: PluginVersion,
        /// What it replaced, if anything: its version, or why none was read.
        replaced: Option<String>,
    },
    /// The same bytes were already there.
    AlreadyInstalled,
    /// A newer plugin was there and was kept.
    KeptNewer {
        /// Its version.
        installed: PluginVersion,
    },
}

/// What the installer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The plugin.
    pub plugin: PluginOutcome,
    /// Whether the settings file was written (`false`: identical already, or none given).
    pub settings_written: bool,
}

/// Asks `path --version` (10 s at most, empty environment, no stdin).
fn version_of(path: &Path) -> Result<PluginVersion, VersionError> {
    let mut child = Command::new(path)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(VersionError::Spawn)?;
    let deadline = Instant::now() + VERSION_TIMEOUT;
    while child.try_wait().map_err(VersionError::Wait)?.is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(VersionError::Timeout);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().map_err(VersionError::Wait)?;
    if !out.status.success() {
        return Err(VersionError::Failed(out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    PluginVersion::parse(&text).ok_or_else(|| VersionError::NotSpinel(text.trim().to_owned()))
}

/// Removes the temporary files of `name` that a killed run left in `dir` (`.NAME.install-*`):
/// in a container every run may have the same pid, hence the same temporary name.
fn sweep_leftovers(dir: &Path, name: &str) -> Result<(), InstallError> {
    let prefix = format!(".{name}.install-");
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(InstallError::Write {
                path: dir.to_owned(),
                source,
            });
        }
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            fs::remove_file(entry.path()).map_err(|source| InstallError::Write {
                path: entry.path(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `target` through a temporary file in the same directory (mode `mode`,
/// synced, renamed over the target, directory synced). The temporary file goes on failure.
fn replace_file(target: &Path, bytes: &[u8], mode: u32) -> Result<(), InstallError> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    sweep_leftovers(dir, &name)?;
    let tmp = dir.join(format!(".{name}.install-{}", std::process::id()));
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| InstallError::Write { path, source }
    };
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        // The umask may have taken bits off; set exactly what the CNI and runtime need.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(write_err(dir)(e));
    }
    if let Err(e) = fs::rename(&tmp, target) {
        let _ = fs::remove_file(&tmp);
        return Err(write_err(target)(e));
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(write_err(dir))
}

/// Creates `dir` (0755) if missing, and refuses one others than root may write.
fn trusted_dir(dir: &Path) -> Result<(), InstallError> {
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|source| InstallError::Write {
                path: dir.to_owned(),
                source,
            })?;
    }
    let meta = fs::metadata(dir).map_err(|source| InstallError::Write {
        path: dir.to_owned(),
        source,
    })?;
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(InstallError::UntrustedDir {
            path: dir.to_owned(),
        });
    }
    Ok(())
}

/// Decides what to do with the plugin already at `target`, given the one to install.
fn plugin_plan(
    target: &Path,
    source_bytes: &[u8],
    version: &PluginVersion,
    force: bool,
) -> Result<Option<PluginOutcome>, InstallError> {
    let replaced = match fs::read(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(InstallError::Write {
                path: target.to_owned(),
                source,
            });
        }
        Ok(bytes) if bytes == source_bytes => return Ok(Some(PluginOutcome::AlreadyInstalled)),
        Ok(_) => match version_of(target) {
            Ok(installed) if installed > *version && !force => {
                return Ok(Some(PluginOutcome::KeptNewer { installed }));
            }
            Ok(installed) => Some(installed.to_string()),
            Err(why) => Some(format!("a plugin that {why}")),
        },
    };
    Ok(replaced.map(|r| PluginOutcome::Installed {
        version: version.clone(),
        replaced: Some(r),
    }))
}

/// Installs as `flags` say: checks everything first, then the plugin, then the settings.
pub fn install(flags: &InstallFlags) -> Result<Installed, InstallError> {
    let version = version_of(&flags.source).map_err(|source| InstallError::Source {
        path: flags.source.clone(),
        source,
    })?;
    let source_bytes = fs::read(&flags.source).map_err(|source| InstallError::ReadSource {
        path: flags.source.clone(),
        source,
    })?;
    let settings = match &flags.settings {
        Some(path) => {
            let bytes = fs::read(path).map_err(|reason| SettingsError::Unreadable {
                path: path.clone(),
                reason,
            })?;
            Settings::parse(path, &bytes)?;
            Some(bytes)
        }
        None => None,
    };
    let settings_dir = flags
        .settings_target
        .parent()
        .unwrap_or(Path::new("/"))
        .to_owned();
    if settings.is_some() {
        trusted_dir(&settings_dir)?;
    }
    let target = flags.bin_dir.join(PLUGIN);
    if !flags.bin_dir.is_dir() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&flags.bin_dir)
            .map_err(|source| InstallError::Write {
                path: flags.bin_dir.clone(),
                source,
            })?;
    }
    let plugin = match plugin_plan(&target, &source_bytes, &version, flags.force)? {
        Some(PluginOutcome::Installed { version, replaced }) => {
            replace_file(&target, &source_bytes, 0o755)?;
            PluginOutcome::Installed { version, replaced }
        }
        Some(other) => other,
        None => {
            replace_file(&target, &source_bytes, 0o755)?;
            PluginOutcome::Installed {
                version,
                replaced: None,
            }
        }
    };
    let mut settings_written = false;
    if let Some(bytes) = settings {
        let same = fs::read(&flags.settings_target).is_ok_and(|old| old == bytes);
        let trusted = fs::metadata(&flags.settings_target)
            .is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0);
        if !(same && trusted) {
            replace_file(&flags.settings_target, &bytes, 0o644)?;
            settings_written = true;
        }
    }
    Ok(Installed {
        plugin,
        settings_written,
    })
}

/// Runs the subcommand (the binary's `install-cni`): logs what it did; an error is returned
/// for the binary to report and exit non-zero.
pub fn run(flags: &InstallFlags) -> Result<(), InstallError> {
    let done = install(flags)?;
    let target = flags.bin_dir.join(PLUGIN);
    match &done.plugin {
        PluginOutcome::Installed { version, replaced } => tracing::info!(
            plugin = %target.display(),
            %version,
            replaced = replaced.as_deref().unwrap_or("nothing"),
            "installed the spinel CNI plugin"
        ),
        PluginOutcome::AlreadyInstalled => {
            tracing::info!(plugin = %target.display(), "the same spinel plugin is already installed")
        }
        PluginOutcome::KeptNewer { installed } => tracing::warn!(
            plugin = %target.display(),
            %installed,
            "a newer spinel plugin is installed; kept it (--force replaces it)"
        ),
    }
    match (&flags.settings, done.settings_written) {
        (Some(_), true) => {
            tracing::info!(settings = %flags.settings_target.display(), "wrote the CNI settings")
        }
        (Some(_), false) => {
            tracing::info!(settings = %flags.settings_target.display(), "the CNI settings are already current")
        }
        (None, _) => tracing::info!("no CNI settings given; the node's file is left as it is"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_releases_do() {
        let v = |s: &str| PluginVersion::parse(s).unwrap();
        assert!(v("spinel 0.2.0") > v("spinel 0.1.9"));
        assert!(v("spinel 1.0.0") > v("spinel 1.0.0-rc.1"));
        assert!(v("spinel 0.10.0\n") > v("spinel 0.9.0"));
        assert_eq!(v("spinel 0.1.0").to_string(), "0.1.0");
        assert_eq!(v("spinel 1.0.0-rc.1").to_string(), "1.0.0-rc.1");
        for bad in [
            "sleep (GNU coreutils) 9.1",
            "spinel 1.2",
            "spinel 1.2.3.4",
            "spinel x.y.z",
        ] {
            assert!(PluginVersion::parse(bad).is_none(), "{bad}");
        }
    }
}
