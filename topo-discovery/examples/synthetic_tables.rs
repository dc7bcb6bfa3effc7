//! Writes a synthetic rail-optimised fabric (`SyntheticSpec::rail_optimized`) as one neighbour
//! table file per system, as `spinelctl lldp listen --json` prints them: the input of the
//! end-to-end benchmark in docs/benchmarks.md.
//!
//! `cargo run --release -p topo-discovery --example synthetic_tables -- HOSTS DIR`

use std::io::Write as _;
use std::path::PathBuf;

use topo_discovery::fabric::synthetic::SyntheticSpec;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(hosts), Some(dir)) = (args.next(), args.next()) else {
        return Err("usage: synthetic_tables HOSTS DIR".into());
    };
    let hosts: usize = hosts.parse()?;
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir)?;
    let spec = SyntheticSpec::rail_optimized(hosts);
    let mut files = 0usize;
    let mut bytes = 0usize;
    for table in spec.tables() {
        let text = serde_json::to_vec_pretty(&table)?;
        let path = dir.join(format!("{}.json", table.observer.name));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        f.write_all(&text)?;
        f.write_all(b"\n")?;
        files += 1;
        bytes += text.len() + 1;
    }
    println!(
        "{files} tables, {:.1} MiB, in {}",
        bytes as f64 / (1024.0 * 1024.0),
        dir.display()
    );
    Ok(())
}
