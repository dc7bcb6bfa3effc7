//! Runs one command in the kernel tier's VM, by hand.
//!
//! `spinel-vm [--nics N] [--memory MIB] [--cpus N] [--timeout SECS] [--kernel-arg ARG]...
//! [--module-param MODULE:PARAM=VALUE]... [--e1000e|--igb] [--console] -- PROGRAM [ARGS...]`:
//! prints the command's stdout and stderr, the guest boot time on stderr, and exits with the
//! command's status.

use std::time::Duration;

use anyhow::{Context, bail};
use spinel_kernel_tests::{NicModel, Vm};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut vm = Vm::builder();
    let mut console = false;
    let mut argv = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--nics" => vm = vm.nics(value("--nics")?.parse()?),
            "--memory" => vm = vm.memory_mib(value("--memory")?.parse()?),
            "--cpus" => vm = vm.cpus(value("--cpus")?.parse()?),
            "--timeout" => vm = vm.timeout(Duration::from_secs(value("--timeout")?.parse()?)),
            "--kernel-arg" => vm = vm.kernel_arg(value("--kernel-arg")?),
            "--module-param" => {
                let v = value("--module-param")?;
                let (m, p) = v
                    .split_once(':')
                    .context("--module-param takes MODULE:PARAM=VALUE")?;
                vm = vm.module_param(m, p);
            }
            "--console" => console = true,
            "--e1000e" => vm = vm.nic_model(NicModel::E1000e),
            "--igb" => vm = vm.nic_model(NicModel::Igb),
            "--" => {
                argv.extend(args.by_ref());
                break;
            }
            _ if a.starts_with("--") => bail!("unknown option {a}"),
            _ => {
                argv.push(a);
                argv.extend(args.by_ref());
                break;
            }
        }
    }
    if argv.is_empty() {
        bail!(
            "usage: spinel-vm [--nics N] [--memory MIB] [--cpus N] [--timeout SECS] [--kernel-arg ARG]... [--module-param MODULE:PARAM=VALUE]... [--e1000e|--igb] [--console] -- PROGRAM [ARGS...]"
        );
    }
    let out = vm.try_run(&argv)?;
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    if console {
        eprintln!("--- console\n{}", out.console);
    }
    eprintln!(
        "spinel-vm: exit {} (guest booted in {:.2} s, whole run {:.2} s)",
        out.status,
        out.guest_boot.unwrap_or_default().as_secs_f64(),
        out.wall.as_secs_f64()
    );
    std::process::exit(out.status);
}
