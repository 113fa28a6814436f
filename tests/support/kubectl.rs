//! The one way the tests run kubectl: the kubectl built with the control plane first on `PATH`,
//! the kubeconfig it is meant for, and a private `HOME` and `KUBECACHEDIR` (kubectl caches
//! discovery there; tests must not share or leave one).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The environment kubectl runs with; `Send`, so a background thread can run kubectl too.
#[derive(Clone, Debug)]
pub struct Kubectl {
    vars: Vec<(&'static str, OsString)>,
}

impl Kubectl {
    /// kubectl against `kubeconfig`, with its HOME at `home` and the discovery cache below it.
    pub fn new(kubeconfig: &Path, home: &Path) -> Self {
        let vars = vec![
            ("KUBECONFIG", kubeconfig.as_os_str().to_owned()),
            ("KUBECACHEDIR", home.join("cache").into_os_string()),
            ("HOME", home.as_os_str().to_owned()),
        ];
        Self { vars }
    }

    /// The kubectl in `dir` is the one that runs (the control plane's own version).
    pub fn first_on_path(mut self, dir: &Path) -> Self {
        let mut dirs = vec![dir.to_owned()];
        dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        self.vars.push(("PATH", std::env::join_paths(dirs).expect("PATH joins")));
        self
    }

    /// Gives `cmd` (kubectl, or a shell running it) this environment.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v)))
    }

    /// `kubectl` with this environment (`tokio::process::Command::from` makes it async).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("kubectl");
        self.apply(&mut cmd);
        cmd
    }
}
